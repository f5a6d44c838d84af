"""Land-cover segmentation (small U-Net on 64x64 multispectral tiles), DDP; launched by the team's job template,
which starts one process per device (--nproc-per-node gpu)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, bands=6, classes=9):
        super().__init__()
        self.d1, self.d2 = conv(bands, 32), conv(32, 64)
        self.up = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.u1 = conv(64, 32)
        self.head = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(nn.functional.max_pool2d(a, 2))
        return self.head(self.u1(torch.cat([a, self.up(b)], 1)))


def main():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(UNet())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        x, y = torch.randn(8, 6, 64, 64), torch.randint(0, 9, (8, 64, 64))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 25 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        os.makedirs("out", exist_ok=True)
        torch.save(model.module.state_dict(), "out/unet.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
