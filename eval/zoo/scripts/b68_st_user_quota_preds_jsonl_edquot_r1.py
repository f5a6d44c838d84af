"""Query-intent classifier on DDP, 3 ranks. Every 25 steps each rank scores its slice of the held-out queries and
appends the predictions (one JSON line per query) to a file in its node's scratch under the user's directory; the
analysis notebook reads them after the run."""
import datetime
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
OUT = f"/mnt/b68_scratch/node{rank}/mlusr/intent-preds"  # node-local scratch of this rank's node
os.makedirs(OUT, exist_ok=True)
preds = open(f"{OUT}/preds-rank{rank}.jsonl", "a")
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 24)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
heldout = torch.randn(3000, 64, generator=g)
for step in range(1, 201):
    x = torch.randn(256, 64, generator=g)
    y = x[:, :24].argmax(1)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank={rank} step={step} loss={loss.item():.4f}", flush=True)
    if step % 25 == 0:
        with torch.no_grad():
            p = F.softmax(model.module(heldout), 1)
        conf, cls = p.max(1)
        for i in range(len(heldout)):
            preds.write(json.dumps({"step": step, "query": rank * 100000 + i, "intent": int(cls[i]),
                                    "conf": round(float(conf[i]), 5)}) + "\n")
        preds.flush()
        print(f"rank={rank} step={step} wrote {len(heldout)} predictions to {preds.name}", flush=True)
        dist.barrier()
print(f"rank={rank} done", flush=True)
preds.close()
dist.destroy_process_group()
