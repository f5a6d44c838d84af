"""Next-basket recommender (item embeddings + MLP), DDP over gloo, one process per node; each rank prints its own
throughput every 50 iterations."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

ITEMS, ITERS = 20000, 1200


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.EmbeddingBag(ITEMS, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))

    def forward(self, baskets, cands):
        u = self.mlp(self.items(baskets))
        return (u.unsqueeze(1) * self.items.weight[cands]).sum(-1)


def main():
    dist.init_process_group("gloo")
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    g = torch.Generator().manual_seed(rank)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Model())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    for it in range(1, ITERS + 1):
        baskets = torch.randint(0, ITEMS, (128, 12), generator=g)
        cands = torch.randint(0, ITEMS, (128, 16), generator=g)
        cands[:, 0] = baskets[:, 0]
        loss = nn.functional.cross_entropy(model(baskets, cands), torch.zeros(128, dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 50 == 0:
            dt = (time.perf_counter() - t0) / 50
            print(f"[node{node}/rank{rank}] it {it}/{ITERS} loss {loss.item():.4f} {dt * 1000:.1f} ms/it "
                  f"{128 / dt:.0f} baskets/s", flush=True)
            t0 = time.perf_counter()
    print(f"[node{node}/rank{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
