"""Speaker-embedding model (x-vector style TDNN), DDP over gloo on two nodes with one process each; both nodes mount the
same shared project directory. A crash-safe checkpoint every 100 steps (write a temporary file, then rename it over
ckpt/last.pt); python logging with asctime."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("xvector")
CKPT = "ckpt/last.pt"


def save_checkpoint(model, opt, step):
    os.makedirs(os.path.dirname(CKPT), exist_ok=True)
    tmp = CKPT + ".tmp"
    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
    os.replace(tmp, CKPT)
    log.info("saved %s (step %d)", CKPT, step)


def main():
    dist.init_process_group("gloo")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    log.info("rank %d (local rank %d) of %d", rank, local_rank, dist.get_world_size())
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(40, 512, 5, padding=2), nn.ReLU(), nn.Conv1d(512, 512, 3, padding=1), nn.ReLU(),
        nn.Conv1d(512, 512, 1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(512, 1211)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 501):
        x, y = torch.randn(16, 40, 100, generator=g), torch.randint(0, 1211, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/500 loss %.4f (%.1f s)", step, loss.item(), time.time() - t0)
        if step % 100 == 0 and local_rank == 0:
            save_checkpoint(model, opt, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
