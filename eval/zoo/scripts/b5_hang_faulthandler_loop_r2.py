"""Token-budget bucketed batching for a small LM (DDP, gloo); a step watchdog dumps stacks when a step stalls."""
import datetime
import faulthandler
import random
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

MAX_TOKENS = 2048
WATCHDOG_S = 8


def make_lengths(rank, n=6000):
    rng = random.Random(rank)
    lens = [rng.randint(16, 256) for _ in range(n)]
    if rank == 2:
        # this shard's tail comes from a source of long documents
        lens[900:] = [rng.randint(2100, 4000) for _ in range(n - 900)]
    return lens


def token_budget_batches(lengths):
    """Yield lists of indices whose padded size stays under MAX_TOKENS."""
    order = iter(range(len(lengths)))
    pending = []
    while True:
        batch, longest = [], 0
        while True:
            if pending:
                i = pending.pop()
            else:
                i = next(order, None)
                if i is None:
                    order = iter(range(len(lengths)))  # wrap around: epochs are infinite here
                    continue
            cand = max(longest, lengths[i])
            if cand * (len(batch) + 1) > MAX_TOKENS:
                pending.append(i)
                if batch:
                    break
                continue
            batch.append(i)
            longest = cand
        yield batch, longest


class LM(nn.Module):
    def __init__(self, vocab=1000, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    lengths = make_lengths(rank)
    model = DDP(LM())
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(rank)
    t_last = time.time()
    faulthandler.dump_traceback_later(WATCHDOG_S, repeat=False, file=sys.stderr)
    for step, (batch, longest) in enumerate(token_budget_batches(lengths)):
        seq = min(longest, 64)
        x = torch.randint(0, 1000, (len(batch), seq + 1), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, 1000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        faulthandler.dump_traceback_later(WATCHDOG_S, repeat=False, file=sys.stderr)  # re-arm for the next step
        if step % 10 == 0:
            now = time.time()
            print(f"rank {rank} step {step} batch {len(batch)}x{longest} loss {loss.item():.3f} "
                  f"({(now - t_last) * 100:.0f} ms/step)", flush=True)
            t_last = now
        if step == 400:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
