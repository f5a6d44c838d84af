"""Two-tower retrieval model with sampled softmax over each rank's partition of the item catalogue; hard negatives
are drawn with torch.multinomial from per-item weights that are lowered each time an item is drawn (so the same
negatives are not reused too often). torch.multiprocessing.spawn, tcp:// rendezvous, one tqdm bar per rank."""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

PARTITION_SIZES = [512, 320]  # items in each rank's catalogue partition (categories are split by rank)


class Tower(nn.Module):
    def __init__(self, vocab, d=64):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d)
        self.mlp = nn.Sequential(nn.Linear(d, 128), nn.ReLU(), nn.Linear(128, d))

    def forward(self, x):
        return F.normalize(self.mlp(self.emb(x)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.item = Tower(20000), Tower(5000)


class NegativeSampler:
    def __init__(self, n_items, decay=0.2, seed=1):
        self.weights = torch.ones(n_items)
        self.decay = decay
        self.g = torch.Generator().manual_seed(seed)

    def draw(self, k):
        idx = torch.multinomial(self.weights, k, replacement=False, generator=self.g)
        self.weights[idx] *= self.decay
        return idx


def worker(rank, world, port, steps):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_items = PARTITION_SIZES[rank]
    g = torch.Generator().manual_seed(100 + rank)
    item_feats = torch.randint(0, 5000, (n_items, 6), generator=g)
    sampler = NegativeSampler(n_items)
    bar = tqdm(range(1, steps + 1), desc=f"rank{rank}", position=rank, mininterval=0.5)
    for step in bar:
        queries = torch.randint(0, 20000, (32, 8), generator=g)
        pos = torch.randint(0, n_items, (32,), generator=g)
        neg = sampler.draw(48)
        q = model.module.query(queries)
        items = model.module.item(item_feats[torch.cat([pos, neg])])
        logits = q @ items.T / 0.05
        loss = F.cross_entropy(logits, torch.arange(32))
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():  # the towers are called through .module: average the gradients by hand
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        if step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1]), 800), nprocs=2)
