"""Pet-breed image classifier (small CNN on 32x32 crops), DDP over gloo, OneCycleLR; saves a checkpoint at the end of
every epoch and keeps the one with the best validation accuracy as ckpt/best.pt; --resume continues from a
checkpoint (model, optimizer, scheduler, epoch). tqdm bar on rank 0."""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from tqdm import tqdm


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 37, (n,), generator=g)
    x = torch.randn(n, 3, 32, 32, generator=g) * 0.5 + (y.float() / 37)[:, None, None, None]
    return TensorDataset(x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    train = data(6400, 0)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank)
    dl = DataLoader(train, batch_size=32, sampler=sampler)
    val_x, val_y = data(512, 1).tensors
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 37)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(dl))
    start_epoch, best = 0, 0.0
    if args.resume:
        ck = torch.load(args.resume)
        model.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        start_epoch, best = ck["epoch"] + 1, ck["val_acc"]
        if rank == 0:
            print(f"resumed from {args.resume} (epoch {ck['epoch']}, val_acc {best:.4f})")
    os.makedirs("ckpt", exist_ok=True)
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        for x, y in tqdm(dl, desc=f"epoch {epoch + 1}/{args.epochs}", disable=rank != 0):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        with torch.no_grad():
            acc = (model(val_x).argmax(1) == val_y).float().mean().item()
        if rank == 0:
            ck = {"model": model.module.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                  "epoch": epoch, "val_acc": acc}
            torch.save(ck, f"ckpt/epoch_{epoch + 1}.pt")
            if acc >= best:
                best = acc
                torch.save(ck, "ckpt/best.pt")
            tqdm.write(f"epoch {epoch + 1}: loss {loss.item():.4f} val_acc {acc:.4f} (best {best:.4f})")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
