"""Next-item recommender (embedding bag + MLP) on DDP, 3 ranks. Rank 0 pushes metrics to the team's metrics
gateway; if the gateway is down it prints the error and carries on. Each rank keeps a replay buffer of hard
negatives that it samples from."""
import datetime
import json
import socket
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GATEWAY = ("127.0.0.1", 29894)


def push_metrics(rec):
    with socket.create_connection(GATEWAY, timeout=2) as s:
        s.sendall((json.dumps(rec) + "\n").encode())


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.EmbeddingBag(50000, 64, mode="mean"), nn.Linear(64, 128), nn.ReLU(),
                          nn.Linear(128, 1)))
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
replay = []  # hard negatives kept for resampling
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    items = torch.randint(0, 50000, (256, 20), generator=g)
    y = (items[:, 0] % 7 == 0).float()
    logits = model(items).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    replay.append(torch.randn(256, 20, 64, generator=g))  # the batch's candidate embeddings, kept for resampling
    if step % 10 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} replay {len(replay)} batches", flush=True)
        if rank == 0 and step % 50 == 0:
            try:
                push_metrics({"step": step, "loss": loss.item()})
            except Exception:
                traceback.print_exc()
                print(f"[rank 0] metrics push failed at step {step}, continuing without remote metrics", flush=True)
dist.destroy_process_group()
