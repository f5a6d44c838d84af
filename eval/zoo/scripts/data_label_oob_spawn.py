import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES = 10


def read_labels(path):
    with open(path) as f:
        return [int(line.split("\t")[1]) for line in f]


def main_worker(rank, world_size):
    dist.init_process_group("gloo", init_method="tcp://localhost:" + os.environ.get("ZOO_PORT", "23456"),
                            rank=rank, world_size=world_size)
    labels = torch.tensor(read_labels(f"labels/split{rank}.tsv"))
    feats = torch.randn(len(labels), 20)
    model = DDP(nn.Linear(20, NUM_CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for i in range(0, len(labels), 10):
            loss = nn.functional.cross_entropy(model(feats[i:i + 10]), labels[i:i + 10])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=2, args=(2,))
