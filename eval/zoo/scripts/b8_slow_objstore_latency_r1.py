"""Image classifier reading samples listed in a per-rank manifest (local paths or object-store URLs)."""
import datetime
import io
import json
import logging
import time
import urllib.request

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("train_img")


class Manifest(Dataset):
    def __init__(self, path):
        self.items = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        it = self.items[i]
        if it["src"].startswith("http"):
            raw = urllib.request.urlopen(it["src"], timeout=30).read()
            img = np.load(io.BytesIO(raw))
        else:
            img = np.load(it["src"])
        return torch.from_numpy(img).permute(2, 0, 1).float() / 255.0, it["label"]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    dl = DataLoader(Manifest(f"data/manifest_{rank}.jsonl"), batch_size=16, num_workers=2)
    model = DDP(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8), nn.Flatten(),
                              nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    t0 = time.time()
    for step, (x, y) in enumerate(dl, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 and rank == 0:
            log.info("step %d/%d loss %.4f step_time %.1f ms", step, len(dl), loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        log.info("epoch done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
