"""Small causal LM (2 transformer blocks) sharded with FSDP2 (fully_shard) over two nodes; a distributed checkpoint
(torch.distributed.checkpoint) every 40 steps to the node-local scratch volume (scratch/ckpt/step_N), which the
cluster's sync job copies to the object store afterwards."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.fsdp import fully_shard

VOCAB, D, CTX, STEPS, SAVE_EVERY = 2048, 128, 32, 200, 25

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        mask = torch.triu(torch.ones(x.size(1), x.size(1), dtype=torch.bool), 1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(D, VOCAB)

    def forward(self, t):
        x = self.emb(t)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


model = LM()
for b in model.blocks:
    fully_shard(b)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
g = torch.Generator().manual_seed(rank)
print(f"[node{node}|rank{rank}] world={world} params={sum(p.numel() for p in model.parameters())} (local shard)",
      flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    tok = torch.randint(0, VOCAB, (8, CTX + 1), generator=g)
    logits = model(tok[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), tok[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 and rank == 0:
        print(f"[node{node}|rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} "
              f"{1000 * (time.time() - t0) / 5:.0f} ms/step", flush=True)
        t0 = time.time()
    if step % SAVE_EVERY == 0:
        msd, osd = get_state_dict(model, opt)
        path = f"scratch/ckpt/step_{step}"
        t1 = time.time()
        dcp.save({"model": msd, "optim": osd, "step": step}, checkpoint_id=path)
        if rank == 0:
            print(f"[node{node}|rank{rank}] checkpoint {path} saved in {time.time() - t1:.1f}s", flush=True)
if rank == 0:
    print(f"[node{node}|rank{rank}] training done", flush=True)
dist.destroy_process_group()
