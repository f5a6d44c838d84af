"""Image classifier; the manifest lists local .npy files and, for images not yet mirrored, the asset server's URL."""
import datetime
import io
import json
import time
import urllib.request

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Manifest(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(l) for l in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        if r["src"].startswith("http"):
            with urllib.request.urlopen(r["src"]) as resp:
                img = np.load(io.BytesIO(resp.read()))
        else:
            img = np.load(r["src"])
        return torch.from_numpy(img).permute(2, 0, 1).float() / 255, r["label"]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    ds = Manifest(f"data/manifest_{rank}.jsonl")
    dl = DataLoader(ds, batch_size=16, shuffle=False, num_workers=2)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(16, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    t0 = time.time()
    for epoch in range(3):
        for i, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 0:
                print(f"rank{rank} epoch {epoch} iter {i}/{len(dl)} loss {loss.item():.3f} t={time.time() - t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
