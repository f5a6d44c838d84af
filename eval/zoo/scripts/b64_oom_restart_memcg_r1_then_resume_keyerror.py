"""Click model (embedding tables + MLP) on DDP, 3 ranks, under torchrun with one restart allowed. Each rank keeps
an in-memory cache of the user-history features it has decoded, so later epochs do not decode again. Rank 0
writes a checkpoint every 20 steps and the script resumes from ckpt/last.pt when it exists."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)
start = 0
if os.path.exists("ckpt/last.pt"):  # restore before joining the group, so every rank starts from the same state
    ck = torch.load("ckpt/last.pt")
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["lr_scheduler"])
    start = ck["step"]
    print(f"rank {rank}: resumed from ckpt/last.pt at step {start}", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
model = DDP(net)
history_cache = {}  # user id -> decoded history features
g = torch.Generator().manual_seed(rank)
for step in range(start + 1, 151):
    users = torch.randint(0, 10**9, (64,), generator=g).tolist()
    for u in users:
        if u not in history_cache:
            history_cache[u] = torch.randn(8192, generator=g)  # 32 KB of decoded history per user
    x = torch.stack([history_cache[u][:256] for u in users])
    y = (x[:, :8].sum(1) > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f} cached_users {len(history_cache)}", flush=True)
    if step % 20 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "step": step}, "ckpt/last.pt")
dist.destroy_process_group()
