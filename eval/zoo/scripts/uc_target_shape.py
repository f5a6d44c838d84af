import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    x = torch.randn(1024, 24)
    y = (x[:, :3].sum(1) > 0).long().unsqueeze(1)  # labels as a column, like the csv
    ds = TensorDataset(x, y)
    dl = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds))
    model = DDP(nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 2)))
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(5):
        for xb, yb in dl:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
