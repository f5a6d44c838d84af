"""Click model for a recommender (EmbeddingBag over hashed item ids + MLP) on DDP, 2 ranks, torchrun with
--max-restarts 2. Item features come from the team's feature cache server (feature_cache.py, next to this script):
rank 0 starts it on FEATURE_CACHE_PORT, detached in its own session so that a Ctrl-C in the terminal does not take it
down and the evaluation job can share it, and every rank asks it for the feature rows of its batch."""
import datetime
import json
import os
import subprocess
import sys
import urllib.request

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PORT = int(os.environ.get("FEATURE_CACHE_PORT", "8471"))
rank = int(os.environ["RANK"])
if rank == 0:
    server = subprocess.Popen([sys.executable, "feature_cache.py", "--port", str(PORT)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    line = server.stdout.readline()
    if not line.startswith("serving"):
        raise RuntimeError(f"feature cache server did not start (exit code {server.wait()})")
    print(f"[rank0] feature cache: {line.strip()} (pid {server.pid})", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
world = dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


def features(ids):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}/rows", data=json.dumps(ids).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return torch.tensor(json.loads(r.read()))


model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(1, 201):
    ids = torch.randint(0, 50000, (128,), generator=g).tolist()
    x = features(ids)
    y = (x[:, 0] + 0.2 * torch.randn(128, generator=g) > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] step {step}/200 loss {loss.item():.4f}", flush=True)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
