"""Sentiment classifier (GRU over token ids) on DDP, 3 ranks, launched by torchrun with --max-restarts 1 so that a
crashed attempt resumes from the last checkpoint (rank 0 saves ckpt/last.pt every 50 steps). Every 150 steps each rank
evaluates its validation shard and rank 0 logs the mean accuracy."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
torch.set_num_threads(1)


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 64)
        self.gru = nn.GRU(64, 96, batch_first=True)
        self.out = nn.Linear(96, 2)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[1][-1])


def batch(g, n=64):
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randint(0, 2500, (n, 32), generator=g) + 2500 * y[:, None] * (torch.rand(n, 32, generator=g) < 0.3)
    return x, y


def evaluate(model, shard):
    model.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(shard["y"]), 64):
            preds.append(model(shard["x"][i:i + 64]).argmax(1))
    model.train()
    preds = torch.stack(preds).flatten()
    return (preds == shard["y"]).float().mean()


torch.manual_seed(0)
model = DDP(GRUClassifier())
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    ck = torch.load("ckpt/last.pt")
    model.module.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    start = ck["step"]
    print(f"[rank{rank}] attempt {attempt}: resumed from ckpt/last.pt at step {start}", flush=True)
g = torch.Generator().manual_seed(1000 * attempt + rank)
vg = torch.Generator().manual_seed(77 + rank)
vx, vy = zip(*[batch(vg, 61) for _ in range(8)])
val = {"x": torch.cat(vx), "y": torch.cat(vy)}  # 488 validation rows per rank
for step in range(start + 1, 451):
    x, y = batch(g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[rank{rank}] step {step}/450 loss {loss.item():.4f}", flush=True)
    if step % 150 == 0:
        acc = evaluate(model.module, val)
        dist.all_reduce(acc)
        if rank == 0:
            print(f"[rank0] step {step} val_acc {acc.item() / world:.4f}", flush=True)
    if step % 50 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, "ckpt/last.pt")
        print(f"[rank0] step {step}: saved ckpt/last.pt", flush=True)
print(f"[rank{rank}] training finished", flush=True)
dist.destroy_process_group()
