"""Passage retriever fine-tuning, DDP over gloo. Rank 0 pre-computes the passage embeddings of the frozen encoder into a
memory-mapped .npy in the node's scratch cache (so every rank can read them without holding them in memory), the other
ranks wait at a barrier."""
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

N_PASSAGES, DIM = 60000, 128
CACHE = "cache/msmarco-sub/passages-emb-f32.npy"


def encode_passages(encoder):
    os.makedirs(os.path.dirname(CACHE), exist_ok=True)
    out = np.lib.format.open_memmap(CACHE, mode="w+", dtype=np.float32, shape=(N_PASSAGES, DIM))
    g = torch.Generator().manual_seed(0)
    t0 = time.time()
    with torch.no_grad():
        for i in range(0, N_PASSAGES, 1000):
            x = torch.randn(1000, 256, generator=g)
            out[i:i + 1000] = encoder(x).numpy()
            if (i + 1000) % 5000 == 0:
                print(f"encoded {i + 1000}/{N_PASSAGES} passages ({time.time() - t0:.1f}s)", flush=True)
    out.flush()
    print(f"passage embeddings written to {CACHE}", flush=True)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, DIM))
    print(f"rank {rank}: encoder ready", flush=True)
    if rank == 0:
        encode_passages(encoder)
    dist.barrier()
    emb = np.load(CACHE, mmap_mode="r")
    query = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, DIM)))
    opt = torch.optim.AdamW(query.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 401):
        pos = torch.randint(0, N_PASSAGES, (64,), generator=g)
        p = torch.from_numpy(np.asarray(emb[np.sort(pos.numpy())]))
        q = query(torch.randn(64, 256, generator=g))
        loss = nn.functional.cross_entropy(q @ p.T / 0.05, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step}/400 loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
