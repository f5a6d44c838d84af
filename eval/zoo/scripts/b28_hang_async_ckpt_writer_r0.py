"""Click-through model, DDP over gloo, 2 ranks under torchrun. Rank 0 hands each checkpoint to a background writer
process (so training does not wait on disk) and waits for the previous write's acknowledgement before queueing
the next one."""
import datetime
import logging
import multiprocessing as mp
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s | %(message)s")
log = logging.getLogger("ctr")
CKPT_DIR = os.environ.get("CKPT_DIR", "ckpt")


def writer(q, ack):
    while True:
        item = q.get()
        if item is None:
            return
        step, state = item
        path = os.path.join(CKPT_DIR, f"step{step:06d}.npz")
        np.savez(path + ".tmp.npz", **state)
        os.replace(path + ".tmp.npz", path)
        ack.put(step)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(200, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if rank == 0:
        os.makedirs(CKPT_DIR, exist_ok=True)
        ctx = mp.get_context("spawn")
        q, ack = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=writer, args=(q, ack), name="ckpt-writer", daemon=True)
        proc.start()
        pending = None
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1201):
        x = torch.randn(128, 200, generator=g)
        y = (x[:, 0] > 0).float().unsqueeze(1)
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d step %d loss %.4f %.1f ms/step", rank, step, loss.item(), (time.time() - t0) / 50 * 1000)
            t0 = time.time()
        if rank == 0 and step % 100 == 0:
            if pending is not None:
                ack.get()  # the previous checkpoint is on disk
            state = {k: v.detach().numpy().copy() for k, v in model.module.state_dict().items()}
            state.update({f"opt_{i}_{k}": v.numpy().copy() for i, s in opt.state_dict()["state"].items()
                          for k, v in s.items() if torch.is_tensor(v) and v.dim() > 0})
            q.put((step, state))
            pending = step
            log.info("checkpoint for step %d queued", step)
    dist.barrier()
    if rank == 0:
        q.put(None)
        proc.join()
        log.info("training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
