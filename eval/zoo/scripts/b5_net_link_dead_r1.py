"""Two-tower retrieval model (DDP over gloo), in-batch negatives; plain prints."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Towers(nn.Module):
    def __init__(self, n_q=30000, n_d=30000, d=32):
        super().__init__()
        self.q = nn.EmbeddingBag(n_q, d)
        self.d = nn.EmbeddingBag(n_d, d)

    def forward(self, q, d):
        return F.normalize(self.q(q), dim=-1) @ F.normalize(self.d(d), dim=-1).t() * 20


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(Towers())
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for it in range(1, 2001):
        q = torch.randint(0, 30000, (128, 4), generator=g)
        d = torch.randint(0, 30000, (128, 8), generator=g)
        loss = F.cross_entropy(model(q, d), torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0:
            print(f"[rank{rank}] it {it} loss {loss.item():.4f} ({(time.time() - t) / 20:.3f}s/it)", flush=True)
            t = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
