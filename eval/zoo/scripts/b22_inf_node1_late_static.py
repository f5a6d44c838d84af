"""Next-basket recommender (item embeddings + GRU over the basket history), DDP over gloo, launched on two nodes
with torch.distributed.run (static rendezvous); plain prints with a clock."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} rank{RANK}: {msg}", flush=True)


class Basket(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(30000, 64)
        self.gru = nn.GRU(64, 128, batch_first=True)
        self.out = nn.Linear(128, 30000)

    def forward(self, x):
        return self.out(self.gru(self.items(x))[0][:, -1])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log(f"joined, world size {dist.get_world_size()}")
    torch.manual_seed(0)
    model = DDP(Basket())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 301):
        x, y = torch.randint(0, 30000, (32, 12), generator=g), torch.randint(0, 30000, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log(f"step {step}/300 loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
