"""Speech-command classifier (conv net on log-mel frames), DDP over gloo, one process per node. Every rank writes its
own shard (weights, optimizer, RNG, data position) to the node's local scratch disk every 100 steps; rank 0 records
the newest complete step in ckpt_meta/latest on the shared volume. With --resume every rank loads its shard of
that step."""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s %(message)s", level=logging.INFO)
log = logging.getLogger("speechcmd")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(40, 96, 3, padding=1), nn.ReLU(), nn.Conv1d(96, 96, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(96, 35)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    start = 0
    if args.resume and os.path.exists("ckpt_meta/latest"):
        step_dir = open("ckpt_meta/latest").read().strip()
        path = os.path.join(args.ckpt_dir, step_dir, f"rank{rank}.pt")
        log.info("rank %d resuming from %s", rank, path)
        ck = torch.load(path, map_location="cpu")
        model.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        g.set_state(ck["rng"])
        start = ck["step"]
    log.info("rank %d: steps %d-%d, shards in %s", rank, start + 1, args.steps, args.ckpt_dir)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x = torch.randn(64, 40, 100, generator=g)
        y = torch.randint(0, 35, (64,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            log.info("step %d loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) / (step - start) * 1000)
        if step % 100 == 0:
            d = os.path.join(args.ckpt_dir, f"step_{step:05d}")
            os.makedirs(d, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "rng": g.get_state(),
                        "step": step}, os.path.join(d, f"rank{rank}.pt"))
            dist.barrier()
            if rank == 0:
                os.makedirs("ckpt_meta", exist_ok=True)
                with open("ckpt_meta/latest", "w") as f:
                    f.write(f"step_{step:05d}\n")
                log.info("checkpoint step_%05d complete", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
