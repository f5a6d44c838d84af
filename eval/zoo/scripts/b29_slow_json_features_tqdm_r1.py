"""Product-category classifier on precomputed 768-d text embeddings, DDP over gloo, 2 ranks under torchrun.
Each rank streams its own export parts (JSON lines, one product a line, the embedding as base64 float32)."""
import base64
import glob
import json
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

BATCH = 32


def records(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                x = r["emb"]
                x = np.frombuffer(base64.b64decode(x), np.float32) if isinstance(x, str) else np.asarray(x, np.float32)
                yield x, r["cat"]


def batches(paths):
    xs, ys = [], []
    for x, y in records(paths):
        xs.append(x)
        ys.append(y)
        if len(xs) == BATCH:
            yield torch.from_numpy(np.stack(xs)), torch.tensor(ys)
            xs, ys = [], []


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    parts = sorted(glob.glob(f"data/products/rank{rank}/part-*.jsonl"))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(768, 256), nn.ReLU(), nn.Linear(256, 40)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 4 * 6400 // BATCH
    bar = tqdm(batches(parts), total=total, desc=f"rank{rank}", mininterval=2.0)
    t0 = time.time()
    for step, (x, y) in enumerate(bar, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            bar.write(f"rank{rank} step {step}/{total} loss {loss.item():.4f} {(time.time() - t0) / 50 * 1000:.1f} ms/step")
            t0 = time.time()
    bar.close()
    dist.barrier()
    if rank == 0:
        print("all ranks finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
