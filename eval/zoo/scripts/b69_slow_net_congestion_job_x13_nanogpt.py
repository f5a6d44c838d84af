"""Character-level GPT (nanoGPT-style loop) trained data-parallel on 2 workers; the gradients are averaged by a small
comm wrapper (a gloo all-reduce, then the wire time of the transfer across the fabric: simgpu69.wire stands in for
the NIC). Only the master process prints, as nanoGPT does. The heavy part of each step runs on the accelerator
(simgpu69.kernels: this host has none, the call takes the kernels' time)."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
master_process = rank == 0
torch.set_num_threads(1)
torch.manual_seed(1337)

max_iters, batch_size, block_size, vocab = 200, 8, 32, 65
KERNELS_S, WIRE_S = 0.16, 0.04


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, 32)
        self.pos = nn.Embedding(block_size, 32)
        self.block = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, dropout=0.0)
        self.head = nn.Linear(32, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.block(x))


model = TinyGPT()
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
optimizer = torch.optim.AdamW(params, lr=6e-4)
g = torch.Generator().manual_seed(1337 + rank)
data = torch.randint(0, vocab, (20000,), generator=g)


def get_batch():
    ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=g)
    return (torch.stack([data[i:i + block_size] for i in ix]), torch.stack([data[i + 1:i + 1 + block_size] for i in ix]))


def all_reduce_grads():
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()


if master_process:
    print(f"tokens per iteration will be: {world * batch_size * block_size:,}")
    print(f"number of parameters: {sum(p.numel() for p in params) / 1e6:.2f}M")
t0 = time.time()
for iter_num in range(max_iters + 1):
    X, Y = get_batch()
    logits = model(X)
    loss = F.cross_entropy(logits.view(-1, vocab), Y.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    all_reduce_grads()
    optimizer.step()
    t1 = time.time()
    dt = t1 - t0
    t0 = t1
    if master_process:
        mfu = 0.3 * 0.2 / dt
        print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu {mfu * 100:.2f}%", flush=True)

dist.barrier()
dist.destroy_process_group()
