import datetime
import glob

import pyarrow.parquet as pq
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def load_split(rank, world):
    files = sorted(glob.glob("data/train/*.parquet"))
    mine = files[rank::world]
    tables = [pq.read_table(f, columns=["features", "label"]) for f in mine]
    rows = sum(t.num_rows for t in tables)
    print(f"[rank {rank}] loaded {len(mine)} parquet files, {rows} rows", flush=True)
    x = torch.tensor([r for t in tables for r in t.column("features").to_pylist()])
    y = torch.tensor([r for t in tables for r in t.column("label").to_pylist()])
    return x, y


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = load_split(rank, world)
    model = DDP(nn.Linear(x.shape[1], 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for i in range(0, len(x), 64):
            loss = nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
