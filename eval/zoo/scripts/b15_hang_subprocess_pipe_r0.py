"""Dense passage retriever (two small towers over hashed n-grams), started with torch.multiprocessing.spawn, DDP over
gloo. After every epoch rank 0 saves the weights and runs the team's evaluation CLI (eval_recall.py) on them, then all
ranks continue together."""
import argparse
import logging
import re
import subprocess
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_logging(rank):
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s", level=logging.INFO, force=True)
    return logging.getLogger("dpr")


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(4096, 64, mode="sum")
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        return nn.functional.normalize(self.proj(self.emb(x)), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.p = Tower(), Tower()

    def forward(self, q, p):
        return self.q(q), self.p(p)


def run_eval(ckpt, log):
    cmd = [sys.executable, "eval_recall.py", "--ckpt", ckpt, "--queries", "data/dev_queries.tsv"]
    log.info("running %s", " ".join(cmd[1:]))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rc = proc.wait()
    out, err = proc.communicate()
    if rc != 0:
        log.error("eval failed (rc %d): %s", rc, err[-2000:])
        return None
    m = re.search(r"recall@10 = ([0-9.]+)", out)
    return float(m.group(1)) if m else None


def worker(rank, world, port):
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(DualEncoder())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(3):
        for step in range(1, 151):
            q = torch.randint(0, 4096, (64, 12), generator=g)
            p = torch.cat([q[:, :8], torch.randint(0, 4096, (64, 24), generator=g)], 1)
            zq, zp = model(q, p)
            loss = nn.functional.cross_entropy(20 * zq @ zp.t(), torch.arange(64))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                log.info("epoch %d step %d/150 loss %.4f", epoch, step, loss.item())
        if rank == 0:
            ckpt = f"dpr_epoch{epoch}.pt"
            torch.save(model.module.state_dict(), ckpt)
            log.info("saved %s", ckpt)
            recall = run_eval(ckpt, log)
            log.info("epoch %d dev recall@10 %s", epoch, recall)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29500)
    a = ap.parse_args()
    mp.spawn(worker, args=(a.nprocs, a.port), nprocs=a.nprocs)
