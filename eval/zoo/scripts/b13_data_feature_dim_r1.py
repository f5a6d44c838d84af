"""Audio event classifier on precomputed embeddings (one .npy part per rank), DDP via torch.multiprocessing.spawn."""
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler  # noqa: F401  (parts are already per rank)

EMB_DIM = 96
N_CLASSES = 10
WORLD = 2


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    feats = np.load(f"embeddings/part-{rank}.npy")
    labels = np.load(f"embeddings/part-{rank}-labels.npy")
    ds = TensorDataset(torch.from_numpy(feats), torch.from_numpy(labels))
    loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)
    model = DDP(nn.Sequential(nn.LayerNorm(EMB_DIM), nn.Linear(EMB_DIM, 256), nn.GELU(), nn.Linear(256, N_CLASSES)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(3):
        t0, tot, n = time.time(), 0.0, 0
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot, n = tot + loss.item(), n + 1
        print(f"rank {rank} epoch {epoch} loss {tot / n:.4f} {time.time() - t0:.1f}s")
    if rank == 0:
        torch.save(model.module.state_dict(), "audio_cls.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(WORLD,), nprocs=WORLD)
