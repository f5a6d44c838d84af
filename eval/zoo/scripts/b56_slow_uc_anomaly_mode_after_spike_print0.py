"""Character-level language model (embedding + 2-layer GRU) on DDP, 3 ranks, on a scraped forum dump. Rank 0 prints a
progress line every 10 iterations with the elapsed wall time, iterations per second and tokens per second of the
whole job. A loss-spike guard (on the all-reduced loss, so every rank agrees) switches on autograd's anomaly detection
when the loss jumps, so that a NaN or inf later on comes with the forward op that produced it."""
import datetime
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


class CharLM(nn.Module):
    def __init__(self, vocab=96, dim=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, num_layers=2, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def batch(it):
    seq = torch.randint(0, 96, (B, T + 1), generator=g)
    if it in (81, 82):  # the dump's base64 attachments: no structure at all
        return seq
    seq[:, 1::2] = (seq[:, 0:-1:2] + 1) % 96
    return seq


model = DDP(CharLM())
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
g = torch.Generator().manual_seed(rank)
B, T, ITERS = 16, 24, 120
ema, anomaly = None, False
start = t0 = time.time()
if rank == 0:
    print(f"char-lm: {world} ranks, {B}x{T} tokens per rank per iteration, {ITERS} iterations", flush=True)
for it in range(1, ITERS + 1):
    seq = batch(it)
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 96), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    gl = loss.detach().clone()
    dist.all_reduce(gl)
    gl = gl.item() / world
    if ema is not None and gl > 1.3 * ema and not anomaly:
        torch.autograd.set_detect_anomaly(True)
        anomaly = True
        if rank == 0:
            print(f"iter {it}: loss spike {gl:.3f} vs running {ema:.3f}; anomaly detection on for the rest of the run",
                  flush=True)
    ema = gl if ema is None else 0.9 * ema + 0.1 * gl
    if it % 10 == 0:
        rate = 10 / (time.time() - t0)
        if rank == 0:
            print(f"iter {it:4d} | elapsed {time.time() - start:6.1f}s | loss {gl:.3f} | {rate:.2f} it/s | "
                  f"{rate * B * T * world:.0f} tok/s", flush=True)
        t0 = time.time()
if rank == 0:
    print("done", flush=True)
dist.destroy_process_group()
