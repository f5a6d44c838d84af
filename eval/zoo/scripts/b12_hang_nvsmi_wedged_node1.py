"""Two-tower retrieval model, two nodes. The team's training template logs the node's GPU stats (nvidia-smi) every
50 steps next to the loss, as it does on every job."""
import logging
import socket
import subprocess
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def gpu_stats():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used,utilization.gpu,temperature.gpu",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True).stdout
    return "; ".join(f"gpu{i} {m}MiB {u}% {t}C" for i, m, u, t in
                     (line.split(", ") for line in out.strip().splitlines()))


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(300, 256), nn.ReLU(), nn.Linear(256, 128))

    def forward(self, x):
        return nn.functional.normalize(self.net(x), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.d = Tower(), Tower()

    def forward(self, q, d):
        return self.q(q) @ self.d(d).T / 0.05


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [{socket.gethostname()}:rank{rank}] %(message)s")
    log = logging.getLogger("retrieval")
    torch.manual_seed(rank)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 1001):
        q = torch.randn(64, 300)
        d = q + 0.3 * torch.randn(64, 300)
        loss = nn.functional.cross_entropy(model(q, d), torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info(f"step {step}/1000 loss {loss.item():.4f} {1000 * (time.time() - t0) / 50:.1f} ms/step "
                     f"| {gpu_stats()}")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
