"""Small transformer LM pre-training on tokenised web text, DDP over two nodes (torchrun static rendezvous),
2 ranks per node. Each rank streams its own slice of the token shards."""
import datetime
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, CTX, D = 4096, 64, 128

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
tag = f"[node{node} rank{rank}]"


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.zeros(CTX, D))
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(D, VOCAB)
        mask = torch.triu(torch.full((CTX, CTX), float("-inf")), 1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        h = self.emb(x) + self.pos
        return self.out(self.blocks(h, mask=self.mask, is_causal=True))


torch.manual_seed(0)
model = DDP(LM())
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
g = torch.Generator().manual_seed(1000 + rank)
steps = 400
print(f"{tag} world {world}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, {steps} steps", flush=True)
t0 = time.time()
for step in range(1, steps + 1):
    x = torch.randint(0, VOCAB, (16, CTX + 1), generator=g)
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 20 == 0:
        ms = (time.time() - t0) * 1000 / 20
        print(f"{tag} step {step}/{steps} loss {loss.item():.4f} ppl {math.exp(loss.item()):.0f} {ms:.1f} ms/step",
              flush=True)
        t0 = time.time()
if rank == 0:
    torch.save(model.module.state_dict(), "lm_final.pt")
    print(f"{tag} saved lm_final.pt", flush=True)
dist.destroy_process_group()
