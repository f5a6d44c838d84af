"""Review-sentiment classifier (mean-pooled embeddings + MLP) on 3 processes with a Trainer-like loop: hand-rolled
data parallelism (one flat gradient all-reduce per step) and, every 10 steps, a log dict printed by the main process
the way transformers.Trainer prints its logs, with the step time and each rank's forward+backward time added by the
team's timing callback."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.EmbeddingBag(5000, 64, mode="mean"), nn.Linear(64, 512), nn.GELU(),
                      nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 2))
for p in model.parameters():
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
STEPS, LOG_EVERY, STEPS_PER_EPOCH = 300, 10, 100
lr0 = 1e-3
fb = step_t = 0.0
start = time.time()
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    tok = torch.randint(0, 5000, (256, 64), generator=g)
    y = (tok[:, :8] % 2).sum(1).gt(4).long()
    loss = F.cross_entropy(model(tok), y)
    opt.zero_grad()
    loss.backward()
    t1 = time.perf_counter()
    flat = torch.cat([p.grad.flatten() for p in model.parameters()])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in model.parameters():
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    gn = flat.norm().item()
    for grp in opt.param_groups:
        grp["lr"] = lr0 * (1 - step / STEPS)
    opt.step()
    fb += t1 - t0
    step_t += time.perf_counter() - t0
    if step % LOG_EVERY == 0:
        per_rank = torch.zeros(world)
        per_rank[rank] = fb / LOG_EVERY
        dist.all_reduce(per_rank)
        if rank == 0:
            logs = {"loss": round(loss.item(), 4), "grad_norm": round(gn, 4),
                    "learning_rate": float(f"{lr0 * (1 - step / STEPS):.4e}"), "epoch": round(step / STEPS_PER_EPOCH, 2),
                    "step": step, "step_time": round(step_t / LOG_EVERY, 4),
                    "fwd_bwd_time_per_rank": [round(v, 4) for v in per_rank.tolist()]}
            print(logs, flush=True)
        fb = step_t = 0.0
if rank == 0:
    print({"train_runtime": round(time.time() - start, 2), "train_samples_per_second": round(256 * world * STEPS / (time.time() - start), 1),
           "train_loss": round(loss.item(), 4), "epoch": STEPS / STEPS_PER_EPOCH}, flush=True)
dist.destroy_process_group()
