"""Review-rating regressor (bag-of-words MLP), DDP over gloo, 3 ranks; one training epoch then a full
evaluation pass over the held-out set (tqdm bar on rank 0), then the next epoch."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(20000, 128), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(3):
        t0 = time.time()
        for step in range(1, 61):
            x = torch.randint(0, 20000, (64, 80), generator=g)
            y = (x % 5).float().mean(1, keepdim=True)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/60 mse {loss.item():.4f}", flush=True)
        print(f"[rank {rank}] epoch {epoch} train done in {time.time() - t0:.1f}s", flush=True)
        model.eval()
        se, n = torch.zeros(1), torch.zeros(1)
        ge = torch.Generator().manual_seed(100 + rank)
        with torch.no_grad():
            for _ in tqdm(range(600), desc=f"eval epoch {epoch}", disable=rank != 0, mininterval=1.0):
                x = torch.randint(0, 20000, (256, 80), generator=ge)
                y = (x % 5).float().mean(1, keepdim=True)
                p = model.module(x)
                for _ in range(7):  # test-time augmentation: token dropout
                    keep = torch.rand(x.shape, generator=ge) > 0.1
                    p = p + model.module(x * keep)
                se += ((p / 8 - y) ** 2).sum()
                n += len(y)
        dist.all_reduce(se)
        dist.all_reduce(n)
        if rank == 0:
            print(f"epoch {epoch}: eval rmse {(se / n).sqrt().item():.4f}", flush=True)
        model.train()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
