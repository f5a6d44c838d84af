"""Distillation of a retrieval encoder on 2 ranks (DDP, gloo) from the teacher's precomputed embeddings, stored as
torch shards of 48k x 512 each. A background thread memory-maps the next shard (torch.load(mmap=True)) while the
current one is trained on, so that no step waits for the disk."""
import datetime
import glob
import queue
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def prefetch(paths, q):
    for p in paths:
        shard = torch.load(p, mmap=True, weights_only=True)
        q.put((p, shard))
    q.put(None)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    paths = sorted(glob.glob(f"teacher/rank{rank}/shard-*.pt"))
    q = queue.Queue(maxsize=1)
    threading.Thread(target=prefetch, args=(paths, q), name="shard-prefetch", daemon=True).start()
    student = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512))
    ddp = nn.parallel.DistributedDataParallel(student)
    opt = torch.optim.AdamW(ddp.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    step = 0
    while True:
        t0 = time.time()
        item = q.get()
        if item is None:
            break
        path, shard = item
        print(f"[rank {rank}] shard {path} ready ({shard['emb'].shape[0]} rows, waited {time.time() - t0:.2f}s)",
              flush=True)
        for i in range(0, 30 * 256, 256):
            x = shard["inp"][i:i + 256].float()
            target = shard["emb"][i:i + 256].float()
            loss = 1 - F.cosine_similarity(ddp(x), target).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
            time.sleep(0.05)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
