"""Regression transformer with gradient accumulation and a one-cycle schedule; Lightning-style module and loop."""
import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

EPOCHS = 3
ACCUM = 4


class LitRegressor(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.inp = nn.Linear(8, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 128, batch_first=True), 2)
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.enc(self.inp(x)).mean(1)).squeeze(-1)

    def configure_optimizers(self, steps_per_epoch):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        total = EPOCHS * math.ceil(steps_per_epoch / ACCUM)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=total)
        return opt, sched


def fit():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    x = torch.randn(2000, 12, 8)
    y = x[:, :, 0].mean(1) * 3
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)
    module = LitRegressor()
    opt, sched = module.configure_optimizers(len(loader))
    model = DDP(module)
    if rank == 0:
        print(f"Epochs: {EPOCHS} | batches/epoch: {len(loader)} | accumulate_grad_batches: {ACCUM}")
    global_step = 0
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        total = 0.0
        for i, batch in enumerate(loader):
            x, y = batch
            loss = nn.functional.mse_loss(model(x), y)
            (loss / ACCUM).backward()
            total += loss.item()
            if (i + 1) % ACCUM == 0:
                opt.step()
                opt.zero_grad()
                global_step += 1
            sched.step()
            if rank == 0 and (i + 1) % 20 == 0:
                print(f"Epoch {epoch}: {i + 1}/{len(loader)} train_loss={total / (i + 1):.4f} "
                      f"lr={sched.get_last_lr()[0]:.2e} global_step={global_step}")
        if rank == 0:
            print(f"Epoch {epoch} end: train_loss_epoch={total / len(loader):.4f}")
    if rank == 0:
        torch.save(module.state_dict(), "regressor.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    fit()
