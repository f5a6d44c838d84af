"""Dense retrieval with a memory bank of negatives (MoCo-style), DDP over gloo, 3 ranks.
One JSON object per log line (the cluster's log shipper parses them)."""
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def log(level, msg, **kw):
    rec = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "level": level,
           "rank": int(os.environ.get("RANK", 0)), "msg": msg, **kw}
    print(json.dumps(rec), file=sys.stdout if level == "INFO" else sys.stderr, flush=True)


class Encoder(nn.Module):
    def __init__(self, vocab=20000, dim=128, out=1024):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, out))

    def forward(self, x):
        return F.normalize(self.proj(self.emb(x)), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    log("INFO", "process group ready", world_size=world, backend="gloo")
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    bank = []  # negatives from earlier batches, all ranks
    steps, bs = 400, 128
    for step in range(1, steps + 1):
        t0 = time.time()
        q = torch.randint(0, 20000, (bs, 16))
        d = torch.randint(0, 20000, (bs, 48))
        qe, de = model(q), model(d)
        gathered = [torch.empty_like(de) for _ in range(world)]
        dist.all_gather(gathered, de.detach())
        negs = torch.cat(bank[-16:] + gathered) if bank else torch.cat(gathered)
        logits = torch.cat([(qe * de).sum(-1, keepdim=True), qe @ negs.T], dim=1) / 0.05
        loss = F.cross_entropy(logits, torch.zeros(bs, dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        bank.append(torch.cat(gathered))
        if step % 10 == 0:
            log("INFO", "train", step=step, total=steps, loss=round(loss.item(), 4),
                step_ms=round((time.time() - t0) * 1000, 1))
    dist.barrier()
    log("INFO", "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
