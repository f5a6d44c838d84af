"""Keyword spotting on pre-computed log-mel features (one .safetensors file per utterance), trained with
accelerate on 3 processes. Each process reads its own shard manifest; a DataLoader with 2 workers loads the
feature files."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from safetensors.torch import load_file
from torch.utils.data import DataLoader, Dataset

acc = Accelerator(cpu=True)
rank = acc.process_index


class FeatureFiles(Dataset):
    def __init__(self, manifest):
        self.files = [line.strip() for line in open(manifest) if line.strip()]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        t = load_file(self.files[i])
        return t["mel"], t["label"][0]


ds = FeatureFiles(f"data/manifest-{rank}.txt")
loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, drop_last=True,
                    generator=torch.Generator().manual_seed(rank))
print(f"[process {rank}] {len(ds)} utterances from data/manifest-{rank}.txt, {len(loader)} batches/epoch", flush=True)


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 128, 5, padding=2),
                                  nn.ReLU())
        self.head = nn.Linear(128, 12)

    def forward(self, x):
        return self.head(self.conv(x).mean(-1))


model = KWS()
model, opt = acc.prepare(model, torch.optim.Adam(model.parameters(), lr=1e-3))
for epoch in range(3):
    t0 = time.time()
    for i, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if i % 10 == 0:
            print(f"[process {rank}] epoch {epoch} batch {i}/{len(loader)} loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 100:.0f} ms/batch", flush=True)
            t0 = time.time()
acc.print("training done")
