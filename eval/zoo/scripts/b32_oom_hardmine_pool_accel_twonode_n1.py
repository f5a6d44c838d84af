"""Two-tower retrieval model (query tower / item tower, in-batch + mined hard negatives), trained with accelerate on
two machines. Each process keeps a pool of recent item embeddings to mine hard negatives from."""
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger("retrieval")
N_ITEMS, DIM, BATCH = 40000, 1024, 512
POOL_SIZE = 8192


class Tower(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.emb = nn.EmbeddingBag(n, 128, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, DIM))

    def forward(self, ids):
        return F.normalize(self.mlp(self.emb(ids)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = Tower(30000)
        self.i = Tower(N_ITEMS)

    def forward(self, q, i):
        return self.q(q), self.i(i)


def main():
    acc = Accelerator(cpu=True)
    model = TwoTower()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    neg_pool = []  # recent item embeddings, mined for hard negatives
    log.info(f"process {acc.process_index}/{acc.num_processes}: batch {BATCH}, pool {POOL_SIZE}", main_process_only=False)
    t0 = time.time()
    for step in range(1, 1501):
        q = torch.randint(0, 30000, (BATCH, 8), generator=g)
        it = torch.randint(0, N_ITEMS, (BATCH, 4), generator=g)
        qe, ie = model(q, it)
        logits = qe @ ie.T / 0.05
        if neg_pool:
            pool = torch.cat(neg_pool[-(POOL_SIZE // BATCH):])
            hard = (qe @ pool.T).topk(16, dim=1).values / 0.05
            logits = torch.cat([logits, hard], dim=1)
        loss = F.cross_entropy(logits, torch.arange(BATCH))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        neg_pool.append(ie.detach())
        if step % 20 == 0:
            log.info(f"process {acc.process_index} step {step} loss {loss.item():.4f} "
                     f"({(time.time() - t0) / step * 1000:.0f} ms/step)", main_process_only=False)
    acc.wait_for_everyone()
    log.info("done")


if __name__ == "__main__":
    main()
