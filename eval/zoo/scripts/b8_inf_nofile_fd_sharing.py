"""Multi-field ranking model: every example is a dict of per-field feature tensors, built in 4 DataLoader workers."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

FIELDS = [f"f{i:02d}" for i in range(24)]


class Impressions(Dataset):
    def __len__(self):
        return 20000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {k: torch.randn(8, generator=g) for k in FIELDS}, torch.randint(0, 2, (), generator=g).float()


def collate(batch):
    # keep each example's fields separate (the model pools per field)
    return [ex for ex, _ in batch], torch.stack([y for _, y in batch])


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.field = nn.Linear(8, 16)
        self.head = nn.Linear(16 * len(FIELDS), 1)

    def forward(self, exs):
        rows = [torch.cat([self.field(ex[k]) for k in FIELDS]) for ex in exs]
        return self.head(torch.stack(rows)).squeeze(1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    dl = DataLoader(Impressions(), batch_size=64, num_workers=4, collate_fn=collate, prefetch_factor=4,
                    timeout=30)
    model = DDP(Ranker())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, (exs, y) in enumerate(dl, 1):
        loss = nn.functional.binary_cross_entropy_with_logits(model(exs), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step}/{len(dl)} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
