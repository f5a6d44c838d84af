"""Churn model on account-activity features, DDP over gloo, 3 ranks; each rank reads its monthly export
(jsonl) through a DataLoader with 2 workers."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])


class Accounts(torch.utils.data.Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.lines = f.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        r = json.loads(self.lines[i])
        x = torch.tensor([float(r[k]) for k in ("logins_30d", "tickets_30d", "spend_30d", "tenure_m", "seats")])
        return x, torch.tensor(float(int(r["churned"])))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    months = ["2026-08", "2026-09", "2026-10"]
    ds = Accounts(f"exports/accounts-{months[RANK]}.jsonl")
    dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
    model = DDP(nn.Sequential(nn.BatchNorm1d(5), nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(f"rank {RANK}: {len(ds)} accounts from {months[RANK]}")
    for epoch in range(4):
        t0, n = time.time(), 0
        for x, y in dl:
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n += 1
            if n % 20 == 0:
                print(f"rank {RANK} epoch {epoch} batch {n}/{len(dl)} loss {loss.item():.4f}")
        print(f"rank {RANK} epoch {epoch} done ({time.time() - t0:.1f}s)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
