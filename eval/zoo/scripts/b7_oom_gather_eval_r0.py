"""Retrieval encoder; after each epoch rank 0 gathers every rank's embeddings to compute recall@10."""
import datetime
import logging

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("retrieval")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    enc = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256))
    model = DDP(enc)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(3):
        for step in range(100):
            q = torch.randn(64, 128, generator=g)
            d = q + 0.1 * torch.randn(64, 128, generator=g)
            eq, ed = model(q), model(d)
            loss = nn.functional.cross_entropy(eq @ ed.T, torch.arange(64))
            opt.zero_grad()
            loss.backward()
            opt.step()
        log.info("rank %d epoch %d train loss %.4f", rank, epoch, loss.item())
        # evaluation: embed this rank's slice of the 120k-document corpus and send it to rank 0
        with torch.no_grad():
            docs = torch.randn(40000, 128, generator=g)
            emb = enc(docs)
        payload = {"ids": list(range(rank * 40000, (rank + 1) * 40000)), "emb": emb.tolist()}
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(payload, gathered, dst=0)
        if rank == 0:
            all_emb = torch.tensor([e for p in gathered for e in p["emb"]])
            log.info("epoch %d eval: %d embeddings gathered", epoch, len(all_emb))
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
