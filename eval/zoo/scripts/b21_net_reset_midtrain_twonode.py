"""News-topic classifier (embedding bag + MLP), DDP over gloo, two nodes x 1 process, tqdm progress on rank 0."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

RANK = int(os.environ["RANK"])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(25000, 64), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 20)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(RANK)
    total = 1500
    for step in tqdm(range(1, total + 1), disable=RANK != 0, desc="train", mininterval=1.0):
        ids = torch.randint(0, 25000, (64, 40), generator=g)
        loss = nn.functional.cross_entropy(model(ids), ids[:, 0] % 20)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if RANK == 0 and step % 250 == 0:
            tqdm.write(f"step {step}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
