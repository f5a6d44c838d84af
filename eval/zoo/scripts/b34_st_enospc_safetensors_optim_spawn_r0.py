"""Small ViT on 32x32 crops, DDP over gloo, two processes started with torch.multiprocessing.spawn. Process 0
writes a checkpoint every 50 steps: the weights with safetensors and the optimizer state with torch.save, one
folder per step under checkpoints/."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file


class ViT(nn.Module):
    def __init__(self, dim=128, depth=3, classes=100):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.pos = nn.Parameter(torch.zeros(1, 64, dim))
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.enc(x).mean(1))


def save_checkpoint(model, opt, step, out="checkpoints"):
    d = os.path.join(out, f"step-{step}")
    os.makedirs(d, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(d, "model.safetensors"))
    torch.save({"optimizer": opt.state_dict(), "step": step}, os.path.join(d, "optimizer.pt"))
    print(f"[proc {dist.get_rank()}] saved {d}", flush=True)


def worker(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(ViT())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(32, 3, 32, 32, generator=g)
        y = torch.randint(0, 100, (32,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[proc {rank}] step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
        if step % 50 == 0 and rank == 0:
            save_checkpoint(model.module, opt, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29500
    mp.spawn(worker, args=(2, port), nprocs=2)
