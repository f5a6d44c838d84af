"""Query-intent classifier (embedding bag + MLP), DDP over gloo, 4 ranks. Every 200 steps each rank evaluates on its
part of the held-out queries and the counts are all-reduced."""
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("intent")
VOCAB, CLASSES = 30000, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 128, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, CLASSES))

    def forward(self, ids):
        return self.mlp(self.emb(ids))


def batch(g, n=64):
    ids = torch.randint(0, VOCAB, (n, 16), generator=g)
    return ids, ids[:, 0] % CLASSES


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(Model())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info("rank %d: training 1000 steps", rank)
    for step in range(1, 1001):
        ids, y = batch(g)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d: step %d loss %.4f", rank, step, loss.item())
        if step % 200 == 0:
            log.info("rank %d: evaluating at step %d", rank, step)
            t0 = time.time()
            model.eval()
            correct = torch.zeros(2)
            eg = torch.Generator().manual_seed(1000 + rank)
            with torch.no_grad():
                for _ in range(150):
                    ids, y = batch(eg, 256)
                    correct += torch.tensor([(model(ids).argmax(1) == y).sum().item(), len(y)])
            dist.all_reduce(correct)
            model.train()
            if rank == 0:
                log.info("step %d: eval accuracy %.4f (%d queries, %.1fs)", step, correct[0] / correct[1],
                         int(correct[1]), time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
