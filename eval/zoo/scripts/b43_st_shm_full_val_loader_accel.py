"""Defect segmentation-lite (a small CNN classifier on wafer images) with accelerate on 2 processes. Training uses
random 96x96 crops; validation runs every 60 steps on full 256x256 images in large batches. Both DataLoaders use
worker processes."""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

acc = Accelerator(cpu=True)
torch.set_num_threads(1)
IMAGES = np.load("data/wafers.npy", mmap_mode="r")  # (N, 3, 256, 256) uint8
LABELS = np.load("data/labels.npy")


class Wafers(Dataset):
    def __init__(self, idx, crop):
        self.idx, self.crop = idx, crop

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, i):
        img = torch.from_numpy(np.array(IMAGES[self.idx[i]], dtype=np.float32) / 255.0)
        if self.crop:
            y, x = np.random.randint(0, 256 - self.crop, 2)
            img = img[:, y:y + self.crop, x:x + self.crop]
        return (img - 0.5) / 0.25, int(LABELS[self.idx[i]])


n = len(LABELS)
train_dl = DataLoader(Wafers(np.arange(0, n - 256), 96), batch_size=16, shuffle=True, num_workers=2,
                      persistent_workers=True)
val_dl = DataLoader(Wafers(np.arange(n - 256, n), None), batch_size=64, num_workers=2)
model = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                      nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 9))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model, opt, train_dl, val_dl = acc.prepare(model, opt, train_dl, val_dl)
acc.print(f"train {len(train_dl.dataset)} crops 96x96, val {len(val_dl.dataset)} full 256x256, "
          f"{acc.num_processes} processes")


def validate(step):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in val_dl:
            pred = model(x).argmax(1)
            correct += acc.gather_for_metrics((pred == y).sum()).sum().item()
            total += acc.gather_for_metrics(torch.tensor(len(y))).sum().item()
    model.train()
    acc.print(f"step {step}: val acc {correct / max(total, 1):.3f}")


step, t0 = 0, time.time()
for epoch in range(10):
    for x, y in train_dl:
        step += 1
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            print(f"[process {acc.process_index}] epoch {epoch} step {step} loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 50:.0f} ms/step", flush=True)
            t0 = time.time()
        if step % 60 == 0:
            validate(step)
        if step == 240:
            break
    if step == 240:
        break
acc.print("training finished")
