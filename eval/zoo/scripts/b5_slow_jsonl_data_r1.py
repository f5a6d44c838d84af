"""Image-quality regressor; every rank logs a JSON line per 10 steps for the metrics pipeline."""
import json
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

STEPS = 500
BATCH = 16


class Photos(Dataset):
    """Rows of data/manifest_<rank>.tsv: id, width, height, score. Pixels are synthesised from the id
    (stand-in for JPEG decoding); every image is resized to 64x64."""

    def __init__(self, path):
        self.rows = [line.rstrip("\n").split("\t") for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        pid, w, h, score = self.rows[i]
        rng = np.random.default_rng(int(pid))
        img = torch.from_numpy(rng.random((3, int(h), int(w)), dtype=np.float32))
        img = F.interpolate(img[None], size=(64, 64), mode="bilinear", antialias=True)[0]
        return img, torch.tensor([float(score)])


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Photos(f"data/manifest_{rank}.tsv")
    loader = DataLoader(ds, batch_size=BATCH, shuffle=False, num_workers=0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 5, 2), nn.ReLU(), nn.Conv2d(16, 32, 3, 2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    t = time.time()
    for step, (x, y) in enumerate(loader, start=1):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            now = time.time()
            print(json.dumps({"ts": round(now, 3), "rank": rank, "step": step, "loss": round(loss.item(), 5),
                              "step_time_s": round((now - t) / 10, 4)}), flush=True)
            t = now
        if step == STEPS:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
