"""Small decoder-only LM, DDP over gloo on two nodes (one process each); a torch.distributed.checkpoint save of
model and optimizer to the shared checkpoint directory every 100 steps."""
import argparse
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, SEQ, D = 8000, 32, 256


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(D, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.out(self.blocks(self.emb(x), mask=mask, is_causal=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", default="ckpt")
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--steps", type=int, default=400)
    a = ap.parse_args()
    node, rank = int(os.environ["GROUP_RANK"]), int(os.environ["RANK"])
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [node{node} rank{rank}] %(message)s", level=logging.INFO)
    log = logging.getLogger("lm")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, a.steps + 1):
        x = torch.randint(0, VOCAB, (4, SEQ + 1), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/{a.steps} loss {loss.item():.4f} {1000 * (time.time() - t0) / 20:.0f} ms/step")
            t0 = time.time()
        if step % a.save_every == 0:
            path = os.path.join(a.ckpt_dir, f"step_{step:06d}")
            if rank == 0:
                log.info(f"saving checkpoint to {path}")
            ts = time.time()
            dcp.save({"model": model.module.state_dict(), "optim": opt.state_dict()}, checkpoint_id=path)
            if rank == 0:
                log.info(f"saved checkpoint {path} in {time.time() - ts:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
