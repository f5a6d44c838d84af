"""Word-level LSTM language model on wiki-style articles, DDP over gloo; every 100 steps each rank computes the
sliding-window perplexity of its held-out articles (window 128, overlap 64) and the totals are all-reduced."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

V = 12000


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 128)
        self.rnn = nn.LSTM(128, 256, batch_first=True)
        self.out = nn.Linear(256, V)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


@torch.no_grad()
def doc_nll(model, ids, window=128, overlap=64):
    win = min(window, len(ids))
    nll, count, pos = 0.0, 0, 0
    while pos + win <= len(ids):
        x = ids[pos:pos + win]
        logits = model(x[None, :-1])[0]
        start = 0 if pos == 0 else overlap - 1
        nll += F.cross_entropy(logits[start:], x[1:][start:], reduction="sum").item()
        count += len(x) - 1 - start
        pos += win - overlap
    return nll, count


def evaluate(model, docs):
    model.eval()
    tot = torch.zeros(2, dtype=torch.float64)
    for ids in docs:
        nll, n = doc_nll(model, ids)
        tot += torch.tensor([nll, n], dtype=torch.float64)
    dist.all_reduce(tot)
    model.train()
    return torch.exp(tot[0] / tot[1]).item()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    docs = torch.load(f"data/heldout-{rank}.pt")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randint(0, V, (16, 65), generator=g)
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.3f} {(time.time() - t0) / 20 * 1000:.0f} ms/step")
            t0 = time.time()
        if step % 100 == 0:
            print(f"[rank {rank}] step {step}: held-out eval on {len(docs)} articles")
            ppl = evaluate(model.module, docs)
            print(f"[rank {rank}] step {step}: held-out ppl {ppl:.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
