"""Support-ticket router (bag of hashed tokens + MLP), DDP over gloo; the training files are given as a glob on the
command line and split across ranks; python logging with asctime."""
import argparse
import glob
import json
import logging

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("router")


class Tickets(torch.utils.data.Dataset):
    def __init__(self, files):
        self.rows = [json.loads(line) for f in files for line in open(f)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        ids = [hash(w) % 50000 for w in r["text"].split()][:64]
        return torch.tensor(ids + [0] * (64 - len(ids))), r["queue"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-glob", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    files = sorted(glob.glob(args.train_glob))[rank::world]
    ds = Tickets(files)
    log.info(f"rank {rank}: {len(files)} files, {len(ds)} tickets")
    loader = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 18)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                log.info(f"epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}")
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
