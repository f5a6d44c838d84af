"""Click model (MLP) on DDP, 3 ranks, resumable: every 100 steps each rank writes its own training state (model,
optimizer, its data position and RNG) to ckpt/step-<N>/rank<R>.pt; on start each rank resumes from the newest
state it finds. Right after resuming the ranks check that they agree on the step."""
import datetime
import glob
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
start = 0
states = sorted(glob.glob(f"ckpt/step-*/rank{rank}.pt"))
if states:
    st = torch.load(states[-1])
    net.load_state_dict(st["model"])
    opt.load_state_dict(st["optim"])
    start = st["step"]
    adam_step = int(next(iter(opt.state.values()))["step"])
    print(f"rank {rank}: resumed from {states[-1]} (step {start}, optimizer step {adam_step})", flush=True)
model = DDP(net)

steps = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
dist.all_gather(steps, torch.tensor([start]))
steps = [int(s) for s in steps]
if len(set(steps)) != 1:
    raise RuntimeError(f"ranks resumed from different steps: {steps} (rank {rank} loaded "
                       f"{states[-1] if states else 'nothing'})")

g = torch.Generator().manual_seed(1000 * rank + start)
for step in range(start + 1, start + 301):
    x = torch.randn(256, 32, generator=g)
    y = (x[:, :3].sum(1, keepdim=True) > 0).float()
    loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    if step % 100 == 0:
        os.makedirs(f"ckpt/step-{step:05d}", exist_ok=True)
        torch.save({"model": net.state_dict(), "optim": opt.state_dict(), "step": step,
                    "rng": g.get_state()}, f"ckpt/step-{step:05d}/rank{rank}.pt")
dist.destroy_process_group()
