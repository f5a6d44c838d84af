"""Tabular click model; the dataset keeps the parsed rows as python dicts, read by 3 DataLoader workers."""
import datetime
import random
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, rank, n=160_000):
        rng = random.Random(rank)
        # parsed once in the main process; the workers get it by fork
        self.rows = [{"id": i, "feats": [rng.random() for _ in range(48)], "click": rng.random() < 0.1}
                     for i in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["feats"]), torch.tensor(float(r["click"]))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    t0 = time.time()
    ds = Rows(rank)
    print(f"[rank {rank}] parsed {len(ds)} rows in {time.time() - t0:.1f}s")
    dl = DataLoader(ds, batch_size=256, shuffle=True, num_workers=3)
    model = DDP(nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (x, y) in enumerate(dl, 1):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
