"""Click-through model (field embeddings + MLP), DDP over gloo started with torch.multiprocessing.spawn. A
distributed checkpoint (torch.distributed.checkpoint) of model and optimizer every 100 steps to checkpoints/ (the shared checkpoint volume)."""
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

FIELDS, HASH = 12, 20000


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(FIELDS * HASH, 24)
        self.mlp = nn.Sequential(nn.Linear(FIELDS * 24, 200), nn.ReLU(), nn.Linear(200, 1))

    def forward(self, x):
        return self.mlp(self.emb(x).flatten(1)).squeeze(1)


def worker(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("ctr")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(CTR())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(rank)
    offs = torch.arange(FIELDS) * HASH
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randint(0, HASH, (256, FIELDS), generator=g) + offs
        y = (x[:, 0] % 7 == 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d logloss %.4f (%.1f steps/s)", step, loss.item(), step / (time.time() - t0))
        if step % 100 == 0:
            path = f"checkpoints/ctr/step_{step:06d}"
            dcp.save({"model": model.state_dict(), "optim": opt.state_dict()}, checkpoint_id=path)
            if rank == 0:
                log.info("saved checkpoint %s", path)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
