"""Sentence-pair similarity model (siamese bag of embeddings), DDP over gloo; tqdm bar on rank 0. The data loading was
moved from a single-process notebook into this script and given a DistributedSampler."""
import random

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Pairs(Dataset):
    def __init__(self, n):
        rng = random.Random(0)
        self.rows = [([rng.randrange(20000) for _ in range(24)], [rng.randrange(20000) for _ in range(24)],
                      rng.random()) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        a, b, s = self.rows[i]
        return torch.tensor(a), torch.tensor(b), torch.tensor(s)


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(20000, 128)
        self.proj = nn.Linear(128, 128)

    def forward(self, a, b):
        return nn.functional.cosine_similarity(self.proj(self.emb(a)), self.proj(self.emb(b)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Pairs(20000)
    sampler = DistributedSampler(ds, shuffle=True, seed=13)
    loader = DataLoader(ds, batch_size=64, shuffle=True, sampler=sampler, num_workers=2)
    model = nn.parallel.DistributedDataParallel(Siamese())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for a, b, s in tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0):
            loss = nn.functional.mse_loss(model(a, b), s)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
