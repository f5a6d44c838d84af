"""Tabular income classifier: DistributedSampler reshuffled every epoch, DataLoader workers restarted each epoch,
a tqdm bar on rank 0 and a per-step timing feed (logs/timing.jsonl) from every rank."""
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from tqdm import tqdm

WORLD, EPOCHS = 2, 3


class Census(Dataset):
    def __init__(self, n=6400):
        g = torch.Generator().manual_seed(0)
        self.cat = torch.randint(0, 50, (n, 8), generator=g)
        self.num = torch.randn(n, 12, generator=g)
        self.y = ((self.num[:, 0] + (self.cat[:, 1] % 5 == 0).float()) > 0.5).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        onehot = torch.zeros(8, 50)
        onehot[torch.arange(8), self.cat[i]] = 1.0
        return torch.cat([onehot.flatten(), self.num[i]]), self.y[i]


def run(rank):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ.get('ZOO_PORT', '29500')}",
                            rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(412, 1536), nn.ReLU(), nn.Linear(1536, 1536), nn.ReLU(), nn.Linear(1536, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ds = Census()
    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=rank, shuffle=True, seed=42)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2)
    os.makedirs("logs", exist_ok=True)
    feed = open("logs/timing.jsonl", "a")
    step = 0
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        bar = tqdm(total=len(loader), desc=f"Epoch {epoch + 1}/{EPOCHS}", disable=rank != 0)
        t0 = time.time()
        for x, y in loader:
            t1 = time.time()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t2 = time.time()
            step += 1
            feed.write(json.dumps({"rank": rank, "step": step, "start": round(t0, 4), "end": round(t2, 4),
                                   "data_s": round(t1 - t0, 5), "compute_s": round(t2 - t1, 5)}) + "\n")
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
            t0 = time.time()
        bar.close()
    feed.close()
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "income_mlp.pt")
        print(f"Finished training ({step} steps), saved model to income_mlp.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, nprocs=WORLD)
