import datetime
import glob

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    files = sorted(glob.glob("features/*.bin"))
    print(f"rank {rank}: {len(files)} feature files", flush=True)
    handles = [open(f, "rb") for f in files]  # random access into every file
    model = DDP(nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    for step in range(200):
        rows = []
        for k in rng.integers(0, len(handles), 16):
            h = handles[k]
            h.seek(int(rng.integers(0, 100)) * 128)
            rows.append(np.frombuffer(h.read(128), dtype=np.float32))
        x = torch.from_numpy(np.stack(rows))
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
