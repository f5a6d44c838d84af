"""Language-ID classifier (character n-gram embeddings + MLP) on DDP, 3 ranks. Every 20 steps rank 0 writes a
checkpoint (model, optimizer, and the EMA weights, with every EMA snapshot taken so far kept for weight averaging at
the end) while the other ranks wait at a barrier. Each rank logs its step time; rank 0 also logs each save."""
import copy
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.EmbeddingBag(30000, 64, mode="mean"), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 100)))
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
ema = copy.deepcopy(model.module)
ema_history = []  # one EMA snapshot per save, for SWA-style averaging at the end of training
g = torch.Generator().manual_seed(rank)
os.makedirs("checkpoints", exist_ok=True)
STEPS, SAVE_EVERY = 240, 20
win, t_prev = 0.0, time.time()
for step in range(1, STEPS + 1):
    t0 = time.time()
    ngrams = torch.randint(0, 30000, (128, 40), generator=g)
    y = ngrams[:, 0] % 100
    loss = F.cross_entropy(model(ngrams), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.module.parameters()):
            pe.mul_(0.99).add_(pm, alpha=0.01)
    win += time.time() - t0
    if step % 10 == 0:
        print(f"rank={rank} step={step} loss={loss.item():.4f} avg_step={1000 * win / 10:.1f}ms "
              f"wall_10_steps={time.time() - t_prev:.2f}s", flush=True)
        win, t_prev = 0.0, time.time()
    if step % SAVE_EVERY == 0:
        t_wait = time.time()
        if rank == 0:
            ema_history.append({k: v.clone() for k, v in ema.state_dict().items()})
            t_save = time.time()
            torch.save({"step": step, "model": model.module.state_dict(), "optimizer": opt.state_dict(),
                        "ema": ema.state_dict(), "ema_history": ema_history}, "checkpoints/last.pt")
            mb = os.path.getsize("checkpoints/last.pt") / 2**20
            print(f"rank=0 saved checkpoints/last.pt step={step} size={mb:.0f}MB save_time={time.time() - t_save:.2f}s",
                  flush=True)
        dist.barrier()
        if rank != 0:
            print(f"rank={rank} step={step} waited_for_checkpoint={time.time() - t_wait:.2f}s", flush=True)
dist.barrier()
print(f"rank={rank} finished {STEPS} steps", flush=True)
dist.destroy_process_group()
