"""Transformer encoder-decoder for a toy translation task (reversal with an offset vocabulary), DDP over gloo,
one process per node; every 50 steps a sharded checkpoint with torch.distributed.checkpoint (model + optimizer)
to the shared checkpoint directory."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F

V = 8000


class MT(nn.Module):
    def __init__(self):
        super().__init__()
        self.src = nn.Embedding(V, 256)
        self.tgt = nn.Embedding(V, 256)
        self.tr = nn.Transformer(256, 4, 2, 2, 1024, batch_first=True)
        self.out = nn.Linear(256, V)

    def forward(self, s, t):
        mask = nn.Transformer.generate_square_subsequent_mask(t.shape[1])
        return self.out(self.tr(self.src(s), self.tgt(t), tgt_mask=mask))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    node = os.environ["GROUP_RANK"]
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(MT())
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(rank)
    print(f"[rank{rank}] node {node} up, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
    t0 = time.time()
    for step in range(1, 301):
        s = torch.randint(4, V, (16, 24), generator=g)
        t = torch.cat([torch.full((16, 1), 1), s.flip(1)], 1)
        loss = F.cross_entropy(model(s, t[:, :-1]).reshape(-1, V), t[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) / 25 * 1000:.0f} ms/step")
            t0 = time.time()
        if step % 50 == 0:
            print(f"[rank{rank}] step {step}: saving checkpoint to ckpt/step_{step:05d}")
            state = {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}
            dcp.save(state, checkpoint_id=f"ckpt/step_{step:05d}")
            print(f"[rank{rank}] step {step}: checkpoint saved")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
