"""Sequence-tagging BiGRU on pre-tokenized sentences, DDP over gloo; a sharded torch.distributed.checkpoint (DCP)
save every 100 steps to the shared checkpoint volume; tqdm bar on rank 0, plain prints for checkpoints."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
CKPT = "/mnt/ckpt22/ner-gru"


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12000, 96)
        self.rnn = nn.GRU(96, 128, batch_first=True, bidirectional=True)
        self.out = nn.Linear(256, 17)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    total = 600
    bar = tqdm(range(1, total + 1), disable=RANK != 0, mininterval=1.0, desc="train")
    for step in bar:
        x = torch.randint(0, 12000, (32, 40), generator=g)
        y = torch.randint(0, 17, (32, 40), generator=g)
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 100 == 0:
            t0 = time.time()
            path = f"{CKPT}/step_{step:06d}"
            dcp.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}, checkpoint_id=path)
            if RANK == 0:
                bar.write(f"saved checkpoint {path} in {time.time() - t0:.2f}s")
    if RANK == 0:
        print("finished", total, "steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
