"""Adapter fine-tuning of a frozen text encoder on two nodes (torchrun, static rendezvous). Only the adapters train;
their gradients are averaged with one flat all-reduce per step (cheaper than DDP's hooks for a few small tensors).
The adapter width and the dropout come from the job's environment (ADAPTER_DIM, ADAPTER_DROPOUT), set by each node's
training profile."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

ADAPTER_DIM = int(os.environ.get("ADAPTER_DIM", "64"))
ADAPTER_DROPOUT = float(os.environ.get("ADAPTER_DROPOUT", "0.1"))


class Adapter(nn.Module):
    def __init__(self, d, r):
        super().__init__()
        self.down, self.up, self.drop = nn.Linear(d, r), nn.Linear(r, d), nn.Dropout(ADAPTER_DROPOUT)
        nn.init.zeros_(self.up.weight)

    def forward(self, x):
        return x + self.up(self.drop(F.gelu(self.down(x))))


class Encoder(nn.Module):
    def __init__(self, vocab=12000, d=192, layers=3, n_cls=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, 4, 384, batch_first=True) for _ in range(layers))
        self.adapters = nn.ModuleList(Adapter(d, ADAPTER_DIM) for _ in range(layers))
        self.cls = nn.Linear(d, n_cls)

    def forward(self, x):
        h = self.emb(x)
        for blk, ad in zip(self.blocks, self.adapters):
            h = ad(blk(h))
        return self.cls(h.mean(1))


def average_gradients(params, world):
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[off:off + n].view_as(p))
        off += n


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Encoder()
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith(("adapters.", "cls."))
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"rank {rank}/{world}: adapter_dim={ADAPTER_DIM} dropout={ADAPTER_DROPOUT} "
          f"trainable={sum(p.numel() for p in params)}", flush=True)
    opt = torch.optim.AdamW(params, lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 81):
        x = torch.randint(0, 12000, (16, 48), generator=g)
        y = x[:, 0] % 6
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        average_gradients(params, world)
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step}/80 loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
