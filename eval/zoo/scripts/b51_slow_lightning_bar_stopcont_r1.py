"""Churn model (tabular MLP) trained with the team's small trainer, ported from PyTorch Lightning when the cluster
image dropped it: it keeps Lightning's TQDMProgressBar (stdout, smoothing 0, 'Epoch N' bars with v_num and the
logged loss in the postfix) and writes CSVLogger's layout (logs/lightning_logs/version_0/metrics.csv, hparams.yaml)
every log_every_n_steps, so the dashboards that read them kept working. DDP on gloo under torchrun."""
import csv
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm

BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]"


class CSVLogger:
    def __init__(self, save_dir, name="lightning_logs", version=0):
        self.log_dir = os.path.join(save_dir, name, f"version_{version}")
        os.makedirs(self.log_dir, exist_ok=True)
        self.rows = []

    def log_hyperparams(self, hp):
        with open(os.path.join(self.log_dir, "hparams.yaml"), "w") as f:
            f.writelines(f"{k}: {v}\n" for k, v in hp.items())

    def log_metrics(self, metrics, step):
        self.rows.append({**metrics, "step": step})
        keys = sorted({k for r in self.rows for k in r}, key=lambda k: (k != "epoch", k == "step", k))
        with open(os.path.join(self.log_dir, "metrics.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(self.rows)


class ChurnModel(nn.Module):
    def __init__(self, n_in=96):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if rank == 0:
        print("GPU available: False, used: False")
        print("TPU available: False, using: 0 TPU cores")
        print(f"Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/{world}")
    g = torch.Generator().manual_seed(1)
    x = torch.randn(24000, 96, generator=g)
    y = ((x[:, :5].sum(1) + 0.3 * torch.randn(24000, generator=g)) > 0).float()
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=256, sampler=sampler, num_workers=0)
    model = DDP(ChurnModel())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    max_epochs, limit_train_batches, log_every_n_steps = 3, 40, 10
    logger = CSVLogger("logs") if rank == 0 else None
    if rank == 0:
        logger.log_hyperparams({"lr": 1e-3, "batch_size": 256, "max_epochs": max_epochs})
        print("\n  | Name | Type       | Params | Mode \n--------------------------------------------\n"
              f"0 | net  | Sequential | {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M  | train\n"
              "--------------------------------------------")
    global_step = 0
    for epoch in range(max_epochs):
        sampler.set_epoch(epoch)
        bar = tqdm(desc=f"Epoch {epoch}", total=limit_train_batches, file=sys.stdout, smoothing=0,
                   bar_format=BAR_FORMAT, dynamic_ncols=True, leave=True, disable=rank != 0)
        bar.set_postfix({"v_num": 0})
        for i, (xb, yb) in enumerate(loader):
            if i >= limit_train_batches:
                break
            loss = F.binary_cross_entropy_with_logits(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            global_step += 1
            bar.update(1)
            bar.set_postfix({"v_num": 0, "train_loss": f"{loss.item():.3f}"})
            if rank == 0 and global_step % log_every_n_steps == 0:
                logger.log_metrics({"epoch": epoch, "train_loss": round(loss.item(), 6)}, global_step - 1)
        bar.close()
    if rank == 0:
        print(f"`Trainer.fit` stopped: `max_epochs={max_epochs}` reached.")
        torch.save(model.module.state_dict(), "churn.ckpt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
