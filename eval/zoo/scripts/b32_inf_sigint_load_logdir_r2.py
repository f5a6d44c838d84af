"""Product-title categoriser (char-trigram hashing + MLP), DDP over gloo, 3 ranks; each rank reads and featurises
its own catalogue shard (data/titles-<rank>.tsv) after joining the process group."""
import datetime
import logging
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("catalog")
BUCKETS = 1 << 18


def trigrams(title):
    t = f"  {title.lower()}  "
    return [zlib.crc32(t[i:i + 3].encode()) % BUCKETS for i in range(len(t) - 2)]


def load(rank):
    feats, labels = [], []
    t0 = time.time()
    with open(f"data/titles-{rank}.tsv") as f:
        for n, line in enumerate(f, 1):
            cat, title = line.rstrip("\n").split("\t")
            feats.append(trigrams(title))
            labels.append(int(cat))
            if n % 10000 == 0:
                log.info("[rank%d] featurised %d titles (%.1fs)", rank, n, time.time() - t0)
    return feats, torch.tensor(labels)


class Categoriser(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(BUCKETS, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 50))

    def forward(self, x, offsets):
        return self.mlp(self.bag(x, offsets))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    feats, labels = load(rank)
    log.info("[rank%d] %d titles ready", rank, len(labels))
    model = nn.parallel.DistributedDataParallel(Categoriser())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step, i in enumerate(range(0, len(labels) - 128, 128), 1):
        batch = feats[i:i + 128]
        x = torch.tensor([t for b in batch for t in b])
        off = torch.tensor([0] + [len(b) for b in batch[:-1]]).cumsum(0)
        loss = F.cross_entropy(model(x, off), labels[i:i + 128])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("[rank%d] step %d loss %.4f", rank, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
