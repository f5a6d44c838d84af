"""Query/passage retrieval model (two towers), DDP over gloo, one rank per node, launched on each node with
python -m torch.distributed.run. Every step the hardest in-batch negatives are kept in a bank that the next epoch's
mining pass re-scores."""
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("retrieval")

STEPS = 2000
BATCH = 256
DIM = 256


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(8000, 128, mode="mean")
        self.proj = nn.Sequential(nn.Linear(128, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, ids):
        return F.normalize(self.proj(self.emb(ids)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.p = Tower(), Tower()

    def forward(self, q, p):
        return self.q(q), self.p(p)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    node = int(os.environ.get("GROUP_RANK", "0"))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    bank = []  # (query emb, passage emb, passage ids) of the hardest negatives, re-scored by the mining pass
    log.info("node%d rank%d/%d: training %d steps, batch %d", node, rank, world, STEPS, BATCH)
    for step in range(1, STEPS + 1):
        q = torch.randint(0, 8000, (BATCH, 16), generator=g)
        p = torch.randint(0, 8000, (BATCH, 64), generator=g)
        qe, pe = model(q, p)
        scores = qe @ pe.T / 0.05
        loss = F.cross_entropy(scores, torch.arange(BATCH))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            hard = (scores - 1e4 * torch.eye(BATCH)).topk(4, dim=1).indices.flatten()
            bank.append((qe.repeat_interleave(4, 0).clone(), pe[hard].clone(), p[hard].clone()))
        if step % 25 == 0:
            log.info("node%d rank%d: step %d/%d loss %.4f hard negatives %d", node, rank, step, STEPS, loss.item(),
                     sum(len(b[0]) for b in bank))
    dist.barrier()
    log.info("node%d rank%d: done", node, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
