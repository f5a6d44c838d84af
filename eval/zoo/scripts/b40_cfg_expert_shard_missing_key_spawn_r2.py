"""Multi-domain ticket router: a shared encoder trained data-parallel, plus one domain expert per rank (rank 0
billing, 1 shipping, 2 legal) trained only on that rank's domain. Resumes the shared encoder from
ckpt/shared.pt and each rank's expert from ckpt/experts/expert_{rank}.pt. Started with
`python train_router.py` (torch.multiprocessing.spawn, one process per domain)."""
import json
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

DOMAINS = ["billing", "shipping", "legal"]
VOCAB, DIM = 20000, 192


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.proj = nn.Sequential(nn.Linear(DIM, DIM), nn.GELU(), nn.LayerNorm(DIM))

    def forward(self, tok):
        return self.proj(self.emb(tok))


class SwiGLU(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate = nn.Linear(d, h, bias=False)
        self.up = nn.Linear(d, h, bias=False)
        self.down = nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DomainExpert(nn.Module):
    def __init__(self, n_intents=24):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.ffn = SwiGLU(DIM, 4 * DIM)
        self.head = nn.Linear(DIM, n_intents)

    def forward(self, h):
        return self.head(h + self.ffn(self.norm(h)))


def run(rank, world, port):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [{DOMAINS[rank]}/rank{rank}] %(message)s")
    log = logging.getLogger("router")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    enc, expert = Encoder(), DomainExpert()
    enc.load_state_dict(torch.load("ckpt/shared.pt", map_location="cpu"))
    path = f"ckpt/experts/expert_{rank}.pt"
    meta = json.load(open(f"ckpt/experts/expert_{rank}.json"))
    log.info("loading expert %s from %s (exported %s by %s)", DOMAINS[rank], path, meta["exported"], meta["run"])
    expert.load_state_dict(torch.load(path, map_location="cpu"))
    enc = DDP(enc)
    opt = torch.optim.AdamW([{"params": enc.parameters(), "lr": 1e-4}, {"params": expert.parameters(), "lr": 5e-4}])
    data = torch.load(f"data/{DOMAINS[rank]}.pt")
    t0 = time.time()
    for step in range(1, 301):
        idx = torch.randint(0, len(data["y"]), (64,))
        loss = F.cross_entropy(expert(enc(data["tok"][idx])), data["y"][idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/300 loss %.4f (%.0f ms/step)", step, loss.item(), (time.time() - t0) * 20)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(os.environ.get("ROUTER_PORT", "29500"))
    mp.spawn(run, args=(3, port), nprocs=3)
