"""Audio event tagger (CNN on log-mel patches), DDP over gloo. Rank 0 writes ckpt/last.pt after every epoch and keeps
a copy of it as ckpt/best-epochNN.pt whenever the validation loss improves (the others wait at a barrier)."""
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 527))
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    vx, vy = torch.randn(256, 1, 32, 32, generator=g), (torch.rand(256, 527, generator=g) < 0.02).float()
    best = float("inf")
    os.makedirs("ckpt", exist_ok=True)
    for epoch in range(1, 9):
        t0 = time.time()
        for _ in range(40):
            x = torch.randn(32, 1, 32, 32, generator=g)
            y = (torch.rand(32, 527, generator=g) < 0.02).float()
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            v = nn.functional.binary_cross_entropy_with_logits(net(vx), vy).reshape(1)
        dist.all_reduce(v)
        v = v.item() / world
        if rank == 0:
            print(f"Epoch {epoch}: train_loss={loss.item():.4f} val_loss={v:.4f} ({time.time() - t0:.1f}s)", flush=True)
            torch.save({"epoch": epoch, "model": net.state_dict(), "optimizer": opt.state_dict()}, "ckpt/last.pt")
            if v < best:
                print(f"Epoch {epoch}: val_loss improved from {best:.4f} to {v:.4f}, copying to ckpt/best-epoch{epoch:02d}.pt",
                      flush=True)
                shutil.copyfile("ckpt/last.pt", f"ckpt/best-epoch{epoch:02d}.pt")
                best = v
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
