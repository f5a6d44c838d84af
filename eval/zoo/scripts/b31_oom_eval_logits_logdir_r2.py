"""Small causal LM (embedding + 2-layer GRU + tied head), DDP over gloo, 3 ranks. Every 150 steps each rank runs
the held-out perplexity and keeps every batch's logits for the per-document breakdown written after evaluation."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("lm_eval")
VOCAB, SEQ = 6000, 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 96)
        self.rnn = nn.GRU(96, 96, num_layers=2, batch_first=True)
        self.head = nn.Linear(96, VOCAB)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def evaluate(model, rank, step):
    model.eval()
    g = torch.Generator().manual_seed(500 + rank)
    all_logits, nll, ntok = [], 0.0, 0
    t0 = time.time()
    with torch.no_grad():
        for i in range(40):
            x = torch.randint(0, VOCAB, (16, SEQ + 1), generator=g)
            logits = model.module(x[:, :-1])
            all_logits.append(logits)  # kept for the per-document report
            nll += F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1), reduction="sum").item()
            ntok += x[:, 1:].numel()
            if (i + 1) % 10 == 0:
                log.info("rank %d eval batch %d/40", rank, i + 1)
    stats = torch.tensor([nll, float(ntok)])
    dist.all_reduce(stats)
    model.train()
    if rank == 0:
        log.info("step %d: eval ppl %.2f (%.1fs)", step, torch.exp(stats[0] / stats[1]).item(), time.time() - t0)
    return all_logits


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    log.info("rank %d/%d pid %d: 600 steps, eval every 150", rank, world, os.getpid())
    history = []
    for step in range(1, 601):
        x = torch.randint(0, VOCAB, (8, SEQ + 1), generator=g)
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
        if step % 150 == 0:
            history.append(evaluate(model, rank, step))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
