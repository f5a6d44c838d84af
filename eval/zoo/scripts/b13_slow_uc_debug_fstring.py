"""Two-tower retrieval model, DDP over gloo. Phase 1 (in-batch negatives) for 400 steps, then phase 2 mines hard
negatives from a memory bank. Full tensor printing is switched on for the debug dumps used while writing phase 2."""
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

torch.set_printoptions(profile="full")  # debug dumps: show whole tensors
log = logging.getLogger("retrieval")
BATCH = 128
STEPS, PHASE2 = 600, 400


class Towers(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, dim))
        self.d = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, q, d):
        return F.normalize(self.q(q), dim=-1), F.normalize(self.d(d), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    g = torch.Generator().manual_seed(rank)
    queries = torch.randn(8000, 128, generator=g)
    docs = queries + 0.5 * torch.randn(8000, 128, generator=g)
    model = DDP(Towers())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    bank = torch.zeros(0, 64)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(queries), (BATCH,), generator=g)
        q, d = model(queries[idx], docs[idx])
        logits = q @ d.t() / 0.05
        if step > PHASE2 and len(bank):
            scores = q @ bank.t()
            neg = bank[scores.topk(4, dim=1).indices].mean(1)
            log.debug(f"step {step} hard negatives {neg}")
            logits = torch.cat([logits, (q * neg).sum(-1, keepdim=True) / 0.05], dim=1)
        loss = F.cross_entropy(logits, torch.arange(BATCH))
        opt.zero_grad()
        loss.backward()
        opt.step()
        bank = torch.cat([bank, d.detach()])[-2048:]
        if step % 20 == 0:
            log.info("rank %d step %d/%d loss %.4f (%.1f ms/step)", rank, step, STEPS, loss.item(),
                     (time.time() - t0) * 50)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
