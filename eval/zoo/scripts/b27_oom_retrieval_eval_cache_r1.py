"""Two-tower retrieval model, DDP over gloo, 2 processes. Every 100 steps each rank encodes its share of the
candidate corpus and keeps the embeddings (with their ids and raw features, for the error analysis) for the
end-of-training recall report."""
import logging
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger("retrieval")
DIM, FEAT = 128, 256


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    tower = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(FEAT, 256), nn.ReLU(), nn.Linear(256, DIM)))
    opt = torch.optim.Adam(tower.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    history = []
    n_cand = 60000 if rank == 1 else 30000  # rank 1 holds the long-tail catalogue shards
    for step in tqdm(range(1, 1001), desc=f"rank {rank}", position=rank, mininterval=1.0):
        q, d = torch.randn(128, FEAT, generator=g), torch.randn(128, FEAT, generator=g)
        zq, zd = tower(q), tower(d)
        loss = nn.functional.cross_entropy(zq @ zd.t(), torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            with torch.no_grad():
                feats = torch.randn(n_cand, FEAT, generator=g)
                emb = tower.module(feats)
            history.append({"step": step, "ids": torch.arange(n_cand), "feats": feats, "emb": emb})
            log.info("rank %d step %d loss %.4f: encoded %d candidates", rank, step, loss.item(), n_cand)
    dist.barrier()
    if rank == 0:
        log.info("recall report over %d snapshots", len(history))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
