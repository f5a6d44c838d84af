"""Sentiment classifier (bag of embeddings) with DDP over gloo; two nodes, two processes each, static rendezvous on
the head node's host name. Progress printed by local rank 0 of each node."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    node = os.environ.get("GROUP_RANK", "0")
    if local == 0:
        print(f"[node{node}] connecting to {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    if local == 0:
        print(f"[node{node}] joined: world_size={dist.get_world_size()}", flush=True)
    torch.manual_seed(rank)
    model = DDP(nn.EmbeddingBag(20000, 64, mode="mean"))
    head = nn.Linear(64, 3)
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.5)
    t0 = time.time()
    for step in range(1, 601):
        ids = torch.randint(0, 20000, (32, 50))
        y = torch.randint(0, 3, (32,))
        loss = nn.functional.cross_entropy(head(model(ids)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 and local == 0:
            print(f"[node{node}] step {step} loss {loss.item():.3f} elapsed {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
