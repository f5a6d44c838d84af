"""Small GPT-style LM pretraining with FSDP2 (fully_shard) on a 2-D HSDP mesh. The parallel layout comes from
parallel.json (dp_replicate x dp_shard), the model from model.json; each transformer block is sharded, then the root."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d, h, layers, ctx):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        x = self.tok(idx) + self.pos(torch.arange(t))
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    par = json.load(open("parallel.json"))
    cfg = json.load(open("model.json"))
    mesh = init_device_mesh("cpu", (par["dp_replicate"], par["dp_shard"]),
                            mesh_dim_names=("dp_replicate", "dp_shard"))
    if rank == 0:
        print(f"world {world}, mesh {dict(zip(mesh.mesh_dim_names, mesh.shape))}, model {cfg}", flush=True)
    torch.manual_seed(0)
    model = TinyGPT(**cfg)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        idx = torch.randint(0, cfg["vocab"], (8, cfg["ctx"] + 1), generator=g)
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 20 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} ({(time.time() - t0) / step * 1000:.0f} ms/step)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
