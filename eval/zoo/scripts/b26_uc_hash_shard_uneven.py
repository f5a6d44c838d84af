"""Language-ID classifier on character n-grams, DDP over gloo, 3 processes. Each rank takes the corpus files whose
hash falls on it (hash(name) % world_size), so no index file is needed; an epoch is one pass over the rank's files."""
import glob
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

BS = 64


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    files = [f for f in sorted(glob.glob("corpus/langid-*.npy")) if hash(os.path.basename(f)) % world == rank]
    data = np.concatenate([np.load(f) for f in files])
    print(f"rank {rank}: {len(files)} files, {len(data)} samples, {len(data) // BS} batches per epoch", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(4096, 64), nn.Linear(64, 24)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.from_numpy(data[:, :-1]), torch.from_numpy(data[:, -1])
    for epoch in range(3):
        t0, total = time.time(), torch.zeros(2)
        for i in range(0, len(data) - BS + 1, BS):
            loss = nn.functional.cross_entropy(model(x[i:i + BS]), y[i:i + BS])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += torch.tensor([loss.item(), 1.0])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {total[0] / total[1]:.4f} over {int(total[1])} steps "
                  f"({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
