"""Two-tower recommender, DDP over gloo under torch.multiprocessing.spawn, 2 processes. Each process memoises the
user-history features it builds (cache keyed by user id) to save the next epoch's work."""
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(processName)s] %(message)s")
log = logging.getLogger("recsys")
STEPS = 600
HIST = 512


def user_features(uid, g):
    # 512 past items x 64 features, float32: ~128 KB per user
    return torch.randn(HIST, 64, generator=g)


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    cache = {}
    log.info("rank %d ready, %d steps", rank, STEPS)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        # rank 0 reads the new-users partition: almost every user id is unseen
        users = torch.randint(0, 10_000_000 if rank == 0 else 2000, (32,), generator=g).tolist()
        feats = []
        for u in users:
            if u not in cache:
                cache[u] = user_features(u, g)
            feats.append(cache[u].mean(0))
        x = torch.stack(feats)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/%d loss %.4f users_cached %d %.1f ms/step", step, STEPS, loss.item(), len(cache),
                     (time.time() - t0) / 25 * 1000)
            t0 = time.time()
    dist.barrier()
    log.info("rank %d finished", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
