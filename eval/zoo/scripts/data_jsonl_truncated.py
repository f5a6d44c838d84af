import json
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class JsonlDataset(Dataset):
    def __init__(self, path):
        self.rows = []
        with open(path) as f:
            for line in f:
                self.rows.append(json.loads(line))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["x"], dtype=torch.float32), torch.tensor(r["y"], dtype=torch.float32)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = JsonlDataset(f"data/train-{rank:05d}-of-{dist.get_world_size():05d}.jsonl")
    print(f"rank {rank}: loaded {len(ds)} rows")
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
