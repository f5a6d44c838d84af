"""Speech-command classifier (conv front-end + GRU), FSDP-style sharded checkpoints with
torch.distributed.checkpoint every 40 steps, DDP over gloo, 3 ranks; plain prints with a wall clock."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_ROOT = os.environ.get("CKPT_ROOT", "checkpoints/kws-gru")


def now():
    return time.strftime("%H:%M:%S")


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 256, 5, padding=2), nn.ReLU())
        self.gru = nn.GRU(256, 256, num_layers=2, batch_first=True)
        self.out = nn.Linear(256, 35)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.out(self.gru(h)[0][:, -1])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(KWS())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    if rank == 0:
        print(f"[{now()}] params {sum(p.numel() for p in model.parameters()):,}, checkpoints -> {CKPT_ROOT}",
              flush=True)
    for step in range(1, 161):
        x = torch.randn(32, 50, 40, generator=g)
        y = torch.randint(0, 35, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[{now()}] rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % 40 == 0:
            path = os.path.join(CKPT_ROOT, f"step-{step}")
            dcp.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step},
                     checkpoint_id=path)
            if rank == 0:
                print(f"[{now()}] saved {path}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
