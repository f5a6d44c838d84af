"""Transformer LM split into two pipeline stages with torch's Pipe (GPipe micro-batching), one pipeline per process
and the pipelines data-parallel across processes; adapted from the team's 2022 pipeline-parallel recipe."""
import argparse
import math
import os
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.rpc as rpc
import torch.nn as nn
from torch.distributed.pipeline.sync import Pipe
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--chunks", type=int, default=4)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()
RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
NTOK, EMSIZE, BPTT = 8000, 128, 35


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(NTOK, EMSIZE)

    def forward(self, src):
        return self.emb(src) * math.sqrt(EMSIZE)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(EMSIZE, NTOK)

    def forward(self, x):
        return self.out(x)


def main():
    dist.init_process_group("gloo")
    tmp = tempfile.NamedTemporaryFile()
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method=f"file://{tmp.name}"))
    stage0 = nn.Sequential(Encoder(), *[nn.TransformerEncoderLayer(EMSIZE, 4, 256) for _ in range(2)])
    stage1 = nn.Sequential(*[nn.TransformerEncoderLayer(EMSIZE, 4, 256) for _ in range(2)], Decoder())
    model = DDP(Pipe(nn.Sequential(stage0, stage1), chunks=args.chunks))
    opt = torch.optim.SGD(model.parameters(), lr=5.0)
    for epoch in range(args.epochs):
        for batch in range(100):
            data = torch.randint(0, NTOK, (BPTT, 20))
            target = torch.randint(0, NTOK, (BPTT * 20,))
            out = model(data).local_value()
            loss = nn.functional.cross_entropy(out.view(-1, NTOK), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0 and batch % 20 == 0:
                print(f"| epoch {epoch:3d} | {batch:5d}/100 batches | loss {loss.item():5.2f} | "
                      f"ppl {math.exp(loss.item()):8.2f}", flush=True)
    rpc.shutdown()


if __name__ == "__main__":
    main()
