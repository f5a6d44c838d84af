"""Speaker-embedding model (1-D conv over log-mel frames), DDP over gloo; a tqdm bar per rank."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm


class SpkNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 5, padding=2),
                                  nn.ReLU())
        self.out = nn.Linear(96, 200)

    def forward(self, x):
        return self.out(self.conv(x).mean(2))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(SpkNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    steps = 900
    bar = tqdm(range(1, steps + 1), desc=f"rank{rank} train", mininterval=1.0, dynamic_ncols=False, ncols=100)
    t0 = time.time()
    for step in bar:
        x = torch.randn(24, 40, 120, generator=g)
        y = torch.randint(0, 200, (24,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            dt = time.time() - t0
            bar.set_postfix(loss=f"{loss.item():.3f}")
            tqdm.write(f"[rank{rank}] step {step}/{steps} loss {loss.item():.4f} {1000 * dt / 50:.1f} ms/step")
            t0 = time.time()
    bar.close()
    if rank == 0:
        print(f"done: {steps} steps, saved spk_final.pt")
        torch.save(model.module.state_dict(), "spk_final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
