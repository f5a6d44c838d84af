"""Click-through-rate tower model, 3 ranks, sharded checkpoint (torch.distributed.checkpoint) every 150 steps.

Every rank appends its per-step timings to logs/timing.jsonl for the cluster's step-time dashboard; the checkpoint
is written as its own record (kind=checkpoint) so the dashboard does not count it as a step.
"""
import json
import logging
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, CKPT_EVERY, LOG_EVERY = 600, 150, 25


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.EmbeddingBag(20000, 32, mode="mean")
        self.item = nn.EmbeddingBag(30000, 32, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64 + 24, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i, dense):
        return self.mlp(torch.cat([self.user(u), self.item(i), dense], 1)).squeeze(1)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s", level=logging.INFO)
    log = logging.getLogger("ctr")
    torch.manual_seed(0)
    model = DDP(Tower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("logs", exist_ok=True)
    feed = open("logs/timing.jsonl", "a")
    node = socket.gethostname()

    def record(**kw):
        feed.write(json.dumps({"rank": rank, "node": node, **kw}) + "\n")
        feed.flush()

    if rank == 0:
        log.info("start training: %d steps, checkpoint every %d", STEPS, CKPT_EVERY)
    for step in range(1, STEPS + 1):
        t0 = time.time()
        u = torch.randint(0, 20000, (256, 6), generator=g)
        i = torch.randint(0, 30000, (256, 4), generator=g)
        dense = torch.randn(256, 24, generator=g)
        y = (dense[:, 0] + 0.1 * (u[:, 0] % 7).float() > 0.3).float()
        t1 = time.time()
        loss = nn.functional.binary_cross_entropy_with_logits(model(u, i, dense), y)
        opt.zero_grad()
        loss.backward()
        t2 = time.time()
        opt.step()
        t3 = time.time()
        record(step=step, start=round(t0, 4), end=round(t3, 4), data_s=round(t1 - t0, 5),
               compute_s=round(t3 - t1, 5), comm_s=0.0, kind="train")
        if rank == 0 and step % LOG_EVERY == 0:
            log.info("step %d/%d loss %.4f step_time %.1f ms", step, STEPS, loss.item(), (t3 - t0) * 1000)
        if step % CKPT_EVERY == 0:
            tc = time.time()
            dcp.save({"model": model.module.state_dict(), "optim": opt.state_dict()},
                     checkpoint_id=f"checkpoints/ctr/step_{step:06d}")
            record(step=step, start=round(tc, 4), end=round(time.time(), 4), kind="checkpoint")
            if rank == 0:
                log.info("saved checkpoint checkpoints/ctr/step_%06d in %.2fs", step, time.time() - tc)
    dist.barrier()
    if rank == 0:
        log.info("finished training after %d steps", STEPS)
    feed.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
