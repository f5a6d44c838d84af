"""Click-through-rate model (hashed feature embeddings + MLP), DDP over gloo, one process per node. The training
data is too big for the nodes' disks, so at the start of each epoch every node downloads that epoch's shard from
its rack's data mirror ($DATA_MIRROR, set by the node's profile) and deletes the previous one."""
import io
import os
import time
import urllib.request
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def fetch_shard(epoch, rank):
    url = f"{os.environ['DATA_MIRROR']}/ctr/epoch{epoch:02d}/part-{rank:05d}.npz"
    t0 = time.time()
    with urllib.request.urlopen(url) as r:
        blob = r.read()
    d = np.load(io.BytesIO(blob))
    print(f"[rank {rank}] fetched {url} ({len(blob) / 2**20:.1f} MiB) in {time.time() - t0:.1f}s", flush=True)
    return torch.from_numpy(d["x"]), torch.from_numpy(d["y"])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.EmbeddingBag(2**18, 32, mode="sum"), nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    for epoch in range(4):
        print(f"[rank {rank}] epoch {epoch}: fetching shard", flush=True)
        x, y = fetch_shard(epoch, rank)
        for step in range(len(y) // 512):
            xb, yb = x[step * 512:(step + 1) * 512].long(), y[step * 512:(step + 1) * 512].float()
            loss = F.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] epoch {epoch}: {step + 1} steps, last loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
