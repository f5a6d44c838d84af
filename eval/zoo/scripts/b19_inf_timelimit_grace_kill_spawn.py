"""Graph node classifier (dense adjacency blocks), DDP over gloo, launched with torch.multiprocessing.spawn; each
rank catches SIGTERM (the cluster's time limit warning) and writes a resume checkpoint before exiting."""
import argparse
import datetime
import logging
import os
import signal
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(processName)s %(message)s", level=logging.INFO)
log = logging.getLogger("gnn")
STOP = {"flag": False}


def on_term(signum, frame):
    STOP["flag"] = True
    log.warning("received SIGTERM (time limit), will write resume checkpoint after this step")


def worker(rank, world, port):
    signal.signal(signal.SIGTERM, on_term)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                           timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 16)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    adj = (torch.rand(1024, 1024) < 0.01).float()
    feats = torch.randn(1024, 256)
    t0 = time.time()
    for step in range(1, 100001):
        h = adj @ feats
        loss = nn.functional.cross_entropy(model(h), torch.randint(0, 16, (1024,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            log.info("rank %d step %d loss %.4f (%.0fs)", rank, step, loss.item(), time.time() - t0)
        if STOP["flag"]:
            log.info("rank %d writing resume checkpoint at step %d", rank, step)
            os.makedirs("resume", exist_ok=True)
            # full history of node embeddings for the resume (one per logged step)
            hist = {f"emb_{k}": torch.randn(1024, 256) for k in range(64)}
            for k in range(20):
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step, **hist},
                           f"resume/rank{rank}.pt")
            log.info("rank %d resume checkpoint written", rank)
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    mp.spawn(worker, args=(2, a.port), nprocs=2)
