"""Small GPT (2 layers, d=96, 32-token context) pre-training on 3 processes with DDP, logging in Megatron-LM's
style: every 10 iterations the last rank prints the iteration, consumed samples, elapsed time per iteration (ms),
learning rate, loss and grad norm."""
import datetime
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
V, T, D = 2048, 32, 96


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(T, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, V)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T), persistent=False)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(T))
        return self.head(self.blocks(h, mask=self.mask, is_causal=True))


torch.manual_seed(1234)
model = DDP(GPT())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
g = torch.Generator().manual_seed(rank)
corpus = torch.randint(0, V, (400000,), generator=g)
ITERS, MICRO, LOG = 300, 8, 10
GBS = MICRO * world
if rank == world - 1:
    print(f"> number of parameters on (tensor, pipeline) model parallel rank (0, 0): "
          f"{sum(p.numel() for p in model.parameters())}", flush=True)
    print(f"[before the start of training step] datetime: {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    print("training ...", flush=True)
t0 = time.time()
for it in range(1, ITERS + 1):
    lr = 3e-4 * min(1.0, it / 40) * 0.5 * (1 + math.cos(math.pi * min(it, ITERS) / ITERS))
    for grp in opt.param_groups:
        grp["lr"] = lr
    idx = torch.randint(0, len(corpus) - T - 1, (MICRO,), generator=g)
    x = torch.stack([corpus[i:i + T] for i in idx.tolist()])
    y = torch.stack([corpus[i + 1:i + T + 1] for i in idx.tolist()])
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if it % LOG == 0 and rank == world - 1:
        ms = 1000 * (time.time() - t0) / LOG
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f" [{stamp}] iteration {it:8d}/{ITERS:8d} | consumed samples: {it * GBS:12d} | elapsed time per "
              f"iteration (ms): {ms:.1f} | learning rate: {lr:.6E} | global batch size: {GBS:5d} | lm loss: "
              f"{loss.item():.6E} | loss scale: 1.0 | grad norm: {gn.item():.3f} | number of skipped iterations:   0 | "
              f"number of nan iterations:   0 |", flush=True)
    if it % LOG == 0:
        t0 = time.time()
dist.barrier()
dist.destroy_process_group()
