"""Flower-species classifier (an MLP head over precomputed 256-d image embeddings) with Hugging Face accelerate,
2 processes on CPU. The embeddings and labels are in data/flowers-embeddings.npz; class names in
data/classes.txt; the number of output classes comes from the command line."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--num-classes", type=int, default=102)
ap.add_argument("--epochs", type=int, default=5)
ap.add_argument("--lr", type=float, default=1e-3)
args = ap.parse_args()

accelerator = Accelerator(cpu=True)
torch.set_num_threads(1)
data = np.load("data/flowers-embeddings.npz")
ds = TensorDataset(torch.from_numpy(data["emb"]), torch.from_numpy(data["label"]).long())
loader = DataLoader(ds, batch_size=32, shuffle=True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, args.num_classes))
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
model, opt, loader = accelerator.prepare(model, opt, loader)
accelerator.print(f"{len(ds)} images, head with {args.num_classes} classes, {len(loader)} steps/epoch per process")
t0 = time.time()
for epoch in range(args.epochs):
    model.train()
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            print(f"process {accelerator.process_index} epoch {epoch} step {step} loss {loss.item():.4f} "
                  f"({time.time() - t0:.1f}s)", flush=True)
accelerator.wait_for_everyone()
accelerator.save(accelerator.unwrap_model(model).state_dict(), "flowers_head.pt")
accelerator.print("done")
