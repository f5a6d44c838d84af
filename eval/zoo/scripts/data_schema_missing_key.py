import json
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Reviews(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.records = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        r = self.records[i]
        return torch.tensor(r["bow"], dtype=torch.float32), torch.tensor(r["rating"] - 1)


def main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["ZOO_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ds = Reviews(f"data/reviews_{rank}.jsonl")
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(50, 32), nn.ReLU(), nn.Linear(32, 5)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(4,), nprocs=4)
