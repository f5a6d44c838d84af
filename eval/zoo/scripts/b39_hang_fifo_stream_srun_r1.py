"""Query-intent classifier trained on a stream: each task reads its shard as JSON lines from the named pipe its
task wrapper feeds (run_task.sh decompresses the shard into pipes/part-<task>), so the shard is never written
out uncompressed on the node's small local disk. Slurm job: `srun -l` starts one task per rank."""
import json
import os
import time
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, BATCH = 20000, 64


def hash_ids(text, n=24):
    ids = [zlib.crc32(w.encode()) % (VOCAB - 1) + 1 for w in text.lower().split()][:n]
    return ids + [0] * (n - len(ids))


def batches(path):
    xs, ys = [], []
    with open(path) as fh:
        for line in fh:
            rec = json.loads(line)
            xs.append(hash_ids(rec["query"]))
            ys.append(rec["intent"])
            if len(xs) == BATCH:
                yield torch.tensor(xs), torch.tensor(ys)
                xs, ys = [], []


class Intent(nn.Module):
    def __init__(self, n=32):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 128, mode="mean", padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, n))

    def forward(self, x):
        return self.mlp(self.emb(x))


def main():
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    model = DDP(Intent())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = f"pipes/part-{rank:02d}"
    print(f"rank {rank}: reading {src}", flush=True)
    t0, step = time.time(), 0
    for x, y in batches(src):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 20 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step", flush=True)
            t0 = time.time()
    print(f"rank {rank}: stream ended after {step} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
