"""Learning-to-rank model on precomputed query-document features, DDP over gloo, one process per node; each node
reads the feature parts the offline pipeline materialised on its local disk (data/local/part-*.npz)."""
import glob
import logging
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)-8s %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)
N_FEATURES = 64


def batches(files, bs=256):
    for p in files:
        d = np.load(p)
        x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
        for i in range(0, len(x) - bs + 1, bs):
            yield x[i:i + bs], y[i:i + bs]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    node = os.environ.get("GROUP_RANK", "?")
    files = sorted(glob.glob(f"data/node{node}/part-*.npz"))
    log.info("node %s rank %d: %d feature parts", node, rank, len(files))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(N_FEATURES, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, (x, y) in enumerate(batches(files), 1):
        loss = nn.functional.mse_loss(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("node %s rank %d: step %d loss %.4f", node, rank, step, loss.item())
    log.info("node %s rank %d: done", node, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
