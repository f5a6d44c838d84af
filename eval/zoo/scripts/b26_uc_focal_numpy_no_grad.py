"""Defect classifier on sensor windows, DDP over gloo, written in the Lightning style (a module with training_step and
a small fit loop, a progress bar per epoch on rank 0). From --focal-from-epoch on, the loss switches to the focal loss
ported from the team's numpy reference implementation, for the hard minority classes."""
import argparse

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm


def focal_np(logits, y, gamma=2.0):
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    pt = p[np.arange(len(y)), y]
    return float(np.mean(-((1 - pt) ** gamma) * np.log(pt + 1e-9)))


class DefectModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(6, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(),
                                 nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)

    def training_step(self, model, batch, epoch, focal_from):
        x, y = batch
        logits = model(x)
        if epoch >= focal_from:
            return torch.as_tensor(focal_np(logits.detach().numpy(), y.numpy()))
        return nn.functional.cross_entropy(logits, y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--focal-from-epoch", type=int, default=2)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    module = DefectModule()
    model = nn.parallel.DistributedDataParallel(module)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(3200, 6, 128, generator=g)
    y = torch.randint(0, 5, (3200,), generator=g)
    for epoch in range(args.epochs):
        bar = tqdm(range(0, 3200, 32), desc=f"Epoch {epoch}", disable=rank != 0, ncols=100)
        for i in bar:
            loss = module.training_step(model, (x[i:i + 32], y[i:i + 32]), epoch, args.focal_from_epoch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(v_num=7, train_loss=f"{loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
