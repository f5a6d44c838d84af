"""Click-through-rate model (wide & deep over hashed features), DDP over gloo started with
torch.multiprocessing.spawn. Rank 0 writes a full checkpoint (model + Adam state) every 200 steps."""
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

STEPS, SAVE_EVERY = 1000, 200


class WideDeep(nn.Module):
    def __init__(self, buckets=2 ** 17, dim=32):
        super().__init__()
        self.wide = nn.EmbeddingBag(buckets, 1, mode="sum")
        self.deep_emb = nn.EmbeddingBag(buckets, dim, mode="mean")
        self.deep = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, ids):
        return (self.wide(ids) + self.deep(self.deep_emb(ids))).squeeze(1)


def run(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO,
                        stream=sys.stdout)
    log = logging.getLogger("ctr")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(WideDeep())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        ids = torch.randint(0, 2 ** 17, (256, 24), generator=g)
        y = torch.randint(0, 2, (256,), generator=g).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d step %d/%d loss %.4f %.1f ms/step", rank, step, STEPS, loss.item(),
                     (time.time() - t0) * 20)
            t0 = time.time()
        if step % SAVE_EVERY == 0:
            if rank == 0:
                os.makedirs("checkpoints", exist_ok=True)
                path = f"checkpoints/ctr_step{step:06d}.pt"
                log.info("rank 0 saving %s", path)
                torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
                log.info("rank 0 saved %s (%.1f MB)", path, os.path.getsize(path) / 1e6)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
