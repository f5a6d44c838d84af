"""Retrieval-embedding adapter: maps stored 512-d document embeddings to a 128-d search space, DDP over gloo.
Each rank reads its own jsonl part of the embedding export per epoch; rows that fail validation are skipped by
drawing another row (the export has occasional broken rows)."""
import json
import logging
import random
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("adapter")
DIM = 512


class EmbeddingRows(Dataset):
    def __init__(self, path, seed):
        with open(path) as f:
            self.lines = f.readlines()
        self.rng = random.Random(seed)
        self.skipped = 0

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        while True:
            rec = json.loads(self.lines[i])
            if len(rec["emb"]) == DIM and rec["label"] is not None:
                return torch.tensor(rec["emb"]), rec["label"]
            self.skipped += 1
            log.debug("bad row %d, drawing another", i)
            i = self.rng.randrange(len(self.lines))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)-7s [rank {rank}] %(message)s")
    model = DDP(nn.Sequential(nn.Linear(DIM, 128), nn.Tanh(), nn.Linear(128, 16)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(2):
        ds = EmbeddingRows(f"export/epoch{epoch}/part-{rank}.jsonl", seed=rank)
        loader = DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)
        log.info("epoch %d: %d rows", epoch, len(ds))
        t_data = t_comp = 0.0
        t = time.time()
        for x, y in loader:
            t1 = time.time()
            t_data += t1 - t
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            t = time.time()
            t_comp += t - t1
            if step % 20 == 0:
                log.info("step %d loss %.4f data_ms %.1f compute_ms %.1f", step, loss.item(),
                         t_data * 50, t_comp * 50)
                t_data = t_comp = 0.0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
