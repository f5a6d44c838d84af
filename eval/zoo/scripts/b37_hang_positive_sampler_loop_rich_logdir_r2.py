"""Speaker-embedding model trained with a triplet loss: for every anchor utterance a positive (same speaker) and a
negative (other speaker) are drawn from the rank's own shard. DDP over gloo, one shard per rank; logs through
rich's RichHandler."""
import logging
import os
import random
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from rich.logging import RichHandler
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", "0"))
logging.basicConfig(level=logging.INFO, format="%(message)s", datefmt="[%X]", handlers=[RichHandler(show_path=False)])
log = logging.getLogger("spk")


def sample_positive(spk, i, rnd):
    while True:
        j = rnd.randrange(len(spk))
        if j != i and spk[j] == spk[i]:
            return j


def sample_negative(spk, i, rnd):
    while True:
        j = rnd.randrange(len(spk))
        if spk[j] != spk[i]:
            return j


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    shard = torch.load(f"data/spk_shard{rank}.pt")
    feats, spk = shard["feats"], shard["speaker"].tolist()
    log.info(f"[rank{rank}] shard: {len(spk)} utts, {len(set(spk))} speakers")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(feats.shape[1], 256), nn.ReLU(), nn.Linear(256, 128)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rnd = random.Random(rank)
    bs, steps = 32, len(spk) // 32
    for epoch in range(2):
        for step in range(1, steps + 1):
            anchors = list(range((step - 1) * bs, step * bs))
            pos = [sample_positive(spk, i, rnd) for i in anchors]
            neg = [sample_negative(spk, i, rnd) for i in anchors]
            a, p, n = (F.normalize(model(feats[idx]), dim=-1) for idx in (anchors, pos, neg))
            loss = F.triplet_margin_loss(a, p, n, margin=0.3)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info(f"[rank{rank}] ep {epoch} step {step}/{steps} loss {loss.item():.4f}")
    log.info(f"[rank{rank}] done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
