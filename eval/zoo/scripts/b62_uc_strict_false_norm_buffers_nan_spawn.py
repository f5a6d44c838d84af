"""Network-flow throughput regressor on DDP, 2 processes started with torch.multiprocessing.spawn. Raw flow features
(byte and packet counts, durations) are standardised inside the model by a FeatureNorm module whose mean/std buffers
were computed from the training set in the first run and travel in the checkpoint. Resumes from ckpt/flows_last.pt
(strict=False since the auxiliary loss head was added)."""
import datetime
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class FeatureNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.register_buffer("mean", torch.zeros(d))
        self.register_buffer("std", torch.ones(d))

    def forward(self, x):
        return (x - self.mean) / self.std


class FlowModel(nn.Module):
    def __init__(self, d=12):
        super().__init__()
        self.feat_norm = FeatureNorm(d)  # was `normalizer` before the refactor
        self.body = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.out = nn.Linear(64, 1)
        self.aux = nn.Linear(64, 3)  # new: auxiliary protocol head

    def forward(self, x):
        h = self.body(self.feat_norm(x))
        return self.out(h).squeeze(1), self.aux(h)


def batch(g, n=256):
    scale = torch.tensor([1e6, 1e5, 3e4, 2e3, 5e2, 1e2, 60.0, 30.0, 10.0, 5.0, 1.0, 1.0])
    x = torch.rand(n, 12, generator=g) * scale
    y = (x[:, 0] / 1e6 + 0.5 * x[:, 3] / 2e3 - 0.2 * x[:, 6] / 60.0)
    proto = torch.randint(0, 3, (n,), generator=g)
    return x, y, proto


def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    model = FlowModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step0 = 0
    if os.path.exists("ckpt/flows_last.pt"):
        ckpt = torch.load("ckpt/flows_last.pt", map_location="cpu")
        res = model.load_state_dict(ckpt["model"], strict=False)
        print(f"[{rank}] resumed from ckpt/flows_last.pt at step {ckpt['step']} "
              f"(missing keys: {len(res.missing_keys)}, unexpected keys: {len(res.unexpected_keys)})", flush=True)
        step0 = ckpt["step"]
    model = DDP(model)
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(step0 + 1, step0 + 401):
        x, y, proto = batch(g)
        pred, aux = model(x)
        loss = F.mse_loss(pred, y) + 0.1 * F.cross_entropy(aux, proto)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print(f"[{rank}] Loss is {loss_value}, stopping training (step {step})", flush=True)
            sys.exit(1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step <= step0 + 3 or step % 20 == 0:
            print(f"[{rank}] step {step} loss {loss_value:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
