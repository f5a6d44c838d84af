"""Regression MLP on 3 ranks with a hand-written ZeRO-1 optimizer: the flattened parameters are split into one
contiguous slice per rank, each rank keeps the Adam moments of its own slice only, updates it and all-gathers the
new parameters. Each rank saves / loads its own slice state as ckpt/step_<N>/optim_rank<R>.pt (model in model.pt)."""
import datetime
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1))
params = list(model.parameters())
numel = sum(p.numel() for p in params)
shard = math.ceil(numel / world)
lo, hi = rank * shard, min(numel, (rank + 1) * shard)


class Zero1Adam:
    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0
        self.exp_avg = torch.zeros(shard)
        self.exp_avg_sq = torch.zeros(shard)

    def state_dict(self):
        return {"exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq, "t": self.t}

    def load_state_dict(self, sd):
        self.exp_avg.copy_(sd["exp_avg"])
        self.exp_avg_sq.copy_(sd["exp_avg_sq"])
        self.t = sd["t"]

    def step(self):
        flat_g = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat_g)
        flat_g /= world
        flat_p = torch.cat([p.data.reshape(-1) for p in params])
        g = F.pad(flat_g[lo:hi], (0, shard - (hi - lo)))
        self.t += 1
        b1, b2 = self.betas
        self.exp_avg.mul_(b1).add_(g, alpha=1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(g, g, value=1 - b2)
        upd = self.exp_avg / (1 - b1 ** self.t) / ((self.exp_avg_sq / (1 - b2 ** self.t)).sqrt() + self.eps)
        mine = F.pad(flat_p[lo:hi], (0, shard - (hi - lo))) - self.lr * upd
        out = [torch.empty(shard) for _ in range(world)]
        dist.all_gather(out, mine)
        new = torch.cat(out)[:numel]
        off = 0
        for p in params:
            p.data.copy_(new[off:off + p.numel()].view_as(p))
            off += p.numel()


opt = Zero1Adam()
print(f"rank {rank}/{world}: {numel} params, optimizer slice [{lo}, {hi}) of {shard}", flush=True)
step0 = 0
if os.path.exists("ckpt/latest"):
    d = "ckpt/" + open("ckpt/latest").read().strip()
    m = torch.load(f"{d}/model.pt", map_location="cpu")
    model.load_state_dict(m["model"])
    step0 = m["step"]
    print(f"rank {rank}: loading {d}/optim_rank{rank}.pt", flush=True)
    opt.load_state_dict(torch.load(f"{d}/optim_rank{rank}.pt", map_location="cpu"))
    print(f"rank {rank}: resumed at step {step0}", flush=True)
g = torch.Generator().manual_seed(rank)
for step in range(step0 + 1, step0 + 201):
    x = torch.randn(128, 64, generator=g)
    y = torch.sin(x[:, :4].sum(1, keepdim=True))
    loss = F.mse_loss(model(x), y)
    model.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"rank {rank}: step {step} loss {loss.item():.5f}", flush=True)
dist.destroy_process_group()
