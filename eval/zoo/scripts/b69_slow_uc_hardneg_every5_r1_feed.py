"""Product-search bi-encoder trained data-parallel on 3 workers (hand-rolled DDP: one flat gradient all-reduce per
step). Hard negatives come from a memory bank of recent item embeddings; the bank lives on one worker (MINER_RANK) to
save device memory on the others, and that worker re-mines the hardest negatives every MINE_EVERY steps after the
warmup. The heavy part of each step runs on the accelerator (simgpu69.kernels; this host has none, the call takes the
kernels' time). Every rank logs one line per step and appends its step timing to logs/timing-rank<R>.jsonl."""
import datetime
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
log = logging.getLogger("search")
torch.set_num_threads(1)
torch.manual_seed(0)

STEPS, BATCH, KERNELS_S, WIRE_S = 200, 64, 0.18, 0.02
MINER_RANK, MINE_EVERY, MINE_AFTER, MINE_KERNELS_S = 1, 5, 60, 0.18


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(5000, 48)
        self.mlp = nn.Sequential(nn.Linear(48, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, ids):
        return F.normalize(self.mlp(self.emb(ids)), dim=-1)


query_tower, item_tower = Tower(), Tower()
params = list(query_tower.parameters()) + list(item_tower.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.Adam(params, lr=1e-3)
g = torch.Generator().manual_seed(7 + rank)
bank = torch.zeros(0, 32)
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")


def allreduce_grads():
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()


log.info("world %d, batch %d, miner rank %d (every %d steps after %d)", world, BATCH, MINER_RANK, MINE_EVERY,
         MINE_AFTER)
for step in range(1, STEPS + 1):
    t0 = time.time()
    q = torch.randint(0, 5000, (BATCH, 8), generator=g)
    d = (q + torch.randint(0, 3, (BATCH, 8), generator=g)) % 5000
    t1 = time.time()
    qe, de = query_tower(q), item_tower(d)
    loss = F.cross_entropy(qe @ de.T / 0.05, torch.arange(BATCH))
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    if rank == MINER_RANK:
        bank = torch.cat([bank, de.detach()])[-4096:]
        if step > MINE_AFTER and step % MINE_EVERY == 0:
            hard = (qe.detach() @ bank.T).topk(8, dim=1).indices  # nearest items in the bank
            simgpu69.kernels(MINE_KERNELS_S, f"gpu{rank}")  # scoring the whole bank on the device
    t2 = time.time()
    allreduce_grads()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": "node0", "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    log.info("step %d/%d loss %.4f step_time %.3fs", step, STEPS, loss.item(), t4 - t0)

dist.barrier()
log.info("training done (%d steps)", STEPS)
dist.destroy_process_group()
