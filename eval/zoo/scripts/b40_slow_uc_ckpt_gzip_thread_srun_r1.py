"""Next-item recommender (two-tower, in-batch negatives), DDP over gloo, started by srun (one task per rank; the
node's task prolog exports RANK/WORLD_SIZE). After the warm-up, every 20 steps the upload rank (--upload-rank; the
task that holds the artifact store's credentials) snapshots the model and optimizer state, and a background thread
gzips the snapshot into artifacts/ so that the step loop never waits for the upload."""
import argparse
import copy
import gzip
import io
import os
import queue
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

N_ITEMS = 20000


class TwoTower(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.items = nn.Embedding(N_ITEMS, d)
        self.user = nn.GRU(d, d, batch_first=True)
        self.proj = nn.Linear(d, d)

    def forward(self, hist, target):
        h, _ = self.user(self.items(hist))
        u = F.normalize(self.proj(h[:, -1]), dim=-1)
        v = F.normalize(self.items(target), dim=-1)
        return u @ v.T / 0.05


def uploader(q, rank):
    while True:
        step, state = q.get()
        t0 = time.time()
        buf = io.BytesIO()
        torch.save(state, buf)
        with gzip.open(f"artifacts/recsys_step{step:05d}.pt.gz", "wb", compresslevel=9) as fh:
            fh.write(buf.getvalue())
        print(f"[rank {rank}] uploaded artifacts/recsys_step{step:05d}.pt.gz "
              f"({len(buf.getvalue()) >> 20} MiB) in {time.time() - t0:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--upload-rank", type=int, default=1)
    ap.add_argument("--upload-after", type=int, default=100, help="no snapshots during warm-up")
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    q = queue.Queue()
    if rank == args.upload_rank:
        os.makedirs("artifacts", exist_ok=True)
        threading.Thread(target=uploader, args=(q, rank), daemon=True).start()
    g = torch.Generator().manual_seed(rank)
    t_win, data_ms = time.time(), 0.0
    for step in range(1, args.steps + 1):
        t_d = time.time()
        hist = torch.randint(0, N_ITEMS, (128, 20), generator=g)
        target = (hist[:, -1] * 7 + 13) % N_ITEMS
        data_ms += (time.time() - t_d) * 1000
        logits = model(hist, target)
        loss = F.cross_entropy(logits, torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            dt = (time.time() - t_win) * 1000 / 20
            print(f"[rank {rank}] step {step}/{args.steps} loss {loss.item():.4f} step_ms {dt:.1f} "
                  f"data_ms {data_ms / 20:.1f}", flush=True)
            t_win, data_ms = time.time(), 0.0
        if step % 20 == 0 and step > args.upload_after and rank == args.upload_rank:
            q.put((step, {"model": {k: v.clone() for k, v in model.module.state_dict().items()},
                          "optim": copy.deepcopy(opt.state_dict())}))
    print(f"[rank {rank}] training done ({q.qsize()} uploads pending)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
