"""Image-quality regressor (small CNN on 48x48 crops), DDP over gloo, 3 processes; tqdm bar on rank 0 and an
all-reduced validation MAE at the end of every epoch."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                              nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    val_x, val_y = torch.randn(1536, 3, 48, 48, generator=g), torch.rand(1536, generator=g)
    for epoch in range(5):
        model.train()
        for _ in tqdm(range(60), desc=f"epoch {epoch}", disable=RANK != 0, mininterval=1.0):
            x, y = torch.randn(32, 3, 48, 48, generator=g), torch.rand(32, generator=g)
            loss = nn.functional.l1_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            err = torch.tensor([sum(nn.functional.l1_loss(model.module(val_x[i:i + 128]).squeeze(1), val_y[i:i + 128],
                                                          reduction="sum").item() for i in range(0, 1536, 128)), 1536.0])
        dist.all_reduce(err)
        if RANK == 0:
            print(f"epoch {epoch}: train_l1 {loss.item():.4f} val_mae {(err[0] / err[1]).item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
