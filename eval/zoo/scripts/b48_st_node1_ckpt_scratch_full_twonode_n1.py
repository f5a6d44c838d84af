"""Session-based recommender (item embeddings + GRU over the click sequence) on DDP across two nodes, 2 processes per
node. Every 50 steps the first process of each node writes a node-local checkpoint (model + optimizer) to the node's
scratch disk ($LOCAL_SCRATCH) for a fast restart on the same nodes, and keeps the last two."""
import datetime
import glob
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank, node = int(os.environ["LOCAL_RANK"]), int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)
N_ITEMS, D = 12000, 96
scratch = os.path.join(os.environ.get("LOCAL_SCRATCH", "/tmp"), "sessrec", "ckpt")
os.makedirs(scratch, exist_ok=True)


class SessRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(N_ITEMS, D)
        self.gru = nn.GRU(D, D, batch_first=True)
        self.out = nn.Linear(D, D)

    def forward(self, seq):
        h, _ = self.gru(self.emb(seq))
        return self.out(h[:, -1]) @ self.emb.weight.T


model = DDP(SessRec())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
print(f"[node{node} rank{rank}] sessions ready, node-local checkpoints in {scratch}", flush=True)


def save_local(step):
    path = os.path.join(scratch, f"step_{step:06d}.pt")
    t0 = time.time()
    torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, path)
    print(f"[node{node} rank{rank}] saved node-local checkpoint {path} "
          f"({os.path.getsize(path) / 2**20:.1f} MiB, {time.time() - t0:.2f}s)", flush=True)
    for old in sorted(glob.glob(os.path.join(scratch, "step_*.pt")))[:-2]:
        os.remove(old)


STEPS = 400
for step in range(1, STEPS + 1):
    seq = torch.randint(0, N_ITEMS, (64, 12), generator=g)
    target = (seq[:, -1] * 7 + 3) % N_ITEMS
    loss = F.cross_entropy(model(seq), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[node{node} rank{rank}] step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 50 == 0:
        if local_rank == 0:
            save_local(step)
        dist.barrier()
dist.destroy_process_group()
