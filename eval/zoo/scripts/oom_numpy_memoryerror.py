import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def build_index(n_items, dim):
    """Dense similarity matrix for hard-negative mining."""
    emb = np.random.rand(n_items, dim).astype(np.float32)
    return emb @ emb.T


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    time.sleep(2)
    model = DDP(torch.nn.Linear(64, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(3):
        sims = build_index(12000 * (epoch + 1), 64)
        print(f"rank {rank} epoch {epoch}: index {sims.shape}", flush=True)
        for _ in range(10):
            x = torch.randn(32, 64)
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()
