"""Fraud scorer (MLP over 64 transaction features + merchant embedding), trained with accelerate on 2 processes;
progress through accelerator.print on the main process and a per-process line every 100 batches."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.merchant = nn.Embedding(50000, 32)
        self.mlp = nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, feats, merchant):
        return self.mlp(torch.cat([feats, self.merchant(merchant)], 1)).squeeze(1)


def main():
    acc = Accelerator(cpu=True)
    model = Scorer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    batches = 600
    for epoch in range(1, 4):
        t0 = time.time()
        for b in range(1, batches + 1):
            feats = torch.randn(256, 64, generator=g)
            merchant = torch.randint(0, 50000, (256,), generator=g)
            y = (torch.rand(256, generator=g) < 0.02).float()
            loss = F.binary_cross_entropy_with_logits(model(feats, merchant), y, pos_weight=torch.tensor(20.0))
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            if b % 30 == 0:
                acc.print(f"Epoch {epoch} Batch {b}/{batches} loss={loss.item():.4f} {b / (time.time() - t0):.1f} it/s")
            if b % 100 == 0:
                print(f"[process {acc.process_index}] epoch {epoch} batch {b} ok", flush=True)
    acc.print("training complete")


if __name__ == "__main__":
    main()
