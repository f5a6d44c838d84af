"""Sequence tagger (BiGRU) on DDP, 3 ranks. Checkpoints go to the team's checkpoint volume (/mnt/b62_ckpt/tagger):
rank 0 writes ckpt_<step>.pt every 100 steps while the others wait at a barrier. Resumes from the newest one."""
import datetime
import glob
import os
import re
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = "/mnt/b62_ckpt/tagger"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6000, 64)
        self.gru = nn.GRU(64, 96, batch_first=True, bidirectional=True)
        self.out = nn.Linear(192, 17)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[0])


model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step0 = 0
ckpts = sorted(glob.glob(f"{CKPT_DIR}/ckpt_*.pt"), key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))
if ckpts:
    state = torch.load(ckpts[-1], map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    step0 = state["step"]
    print(f"[rank {rank}] resumed from {ckpts[-1]} at step {step0}", flush=True)
model = DDP(model)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(step0 + 1, step0 + 301):
    x = torch.randint(0, 6000, (16, 40), generator=g)
    y = torch.randint(0, 17, (16, 40), generator=g)
    loss = F.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} ({(time.time() - t0) / 20 * 1000:.0f} ms/step)",
              flush=True)
        t0 = time.time()
    if step % 100 == 0:
        if rank == 0:
            path = f"{CKPT_DIR}/ckpt_{step}.pt"
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, path)
            print(f"[rank 0] saved {path}", flush=True)
        dist.barrier()
dist.destroy_process_group()
