import datetime
import glob

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TokenShards:
    """Pre-tokenized uint16 shards on the shared filesystem, memory-mapped."""

    def __init__(self, pattern, rank, world, seq_len=128):
        files = sorted(glob.glob(pattern))[rank::world]
        self.arrays = [np.load(f, mmap_mode="r") for f in files]
        self.seq_len = seq_len

    def batches(self, bs=16):
        for arr in self.arrays:
            n = (len(arr) - 1) // self.seq_len
            for i in range(0, n - bs, bs):
                chunk = np.stack([arr[(i + j) * self.seq_len:(i + j + 1) * self.seq_len + 1] for j in range(bs)])
                yield torch.from_numpy(chunk.astype(np.int64))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    data = TokenShards("tokens/shard_*.npy", rank, world)
    model = DDP(nn.Sequential(nn.Embedding(4096, 64), nn.Linear(64, 4096)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, tok in enumerate(data.batches()):
        if step == 800:
            break
        logits = model(tok[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 4096), tok[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
