"""Transformer encoder for sequence classification, DDP over gloo across two nodes (one process each)."""
import datetime
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"[rank {rank}] host {socket.gethostname()} world {dist.get_world_size()}")
    layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    model = DDP(nn.Sequential(nn.Embedding(8000, 128), nn.TransformerEncoder(layer, 2)))
    head = nn.Linear(128, 5)
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1001):
        x = torch.randint(0, 8000, (16, 48), generator=g)
        y = torch.randint(0, 5, (16,), generator=g)
        loss = nn.functional.cross_entropy(head(model(x).mean(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} ({(time.time() - t0) / 20 * 1000:.0f} ms/step)")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
