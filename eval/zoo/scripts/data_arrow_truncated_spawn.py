import os

import pyarrow as pa
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class ArrowDataset(Dataset):
    def __init__(self, path):
        with pa.memory_map(path) as source:
            self.table = pa.ipc.open_file(source).read_all()
        self.x = self.table.column("embedding").to_pylist()
        self.y = self.table.column("score").to_pylist()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.tensor(self.x[i]), torch.tensor([self.y[i]])


def main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["ZOO_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ds = ArrowDataset("cache/train.arrow")
    dl = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds))
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters())
    for x, y in dl:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {rank} done, loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(3,), nprocs=3)
