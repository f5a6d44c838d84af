"""Image-patch denoiser with a two-phase curriculum, DDP over gloo. Phase 1 (steps 1-150): all patches. Phase 2:
hard patches only (high-variance ones), sampled fresh every step."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Subset, TensorDataset


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    clean = torch.randn(6000, 1, 16, 16, generator=g) * torch.rand(6000, 1, 1, 1, generator=g) * 2
    noisy = clean + 0.3 * torch.randn(clean.shape, generator=g)
    ds = TensorDataset(noisy, clean)
    hard = Subset(ds, (clean.flatten(1).var(1) > 1.0).nonzero().squeeze(1).tolist())
    model = DDP(nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 3, padding=1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    easy_loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    easy_iter = iter(easy_loader)
    t0 = time.time()
    for step in range(1, 261):
        if step <= 150:
            x, y = next(easy_iter)
        else:
            x, y = next(iter(DataLoader(hard, batch_size=32, shuffle=True, num_workers=2)))
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            dt = time.time() - t0
            print(f"step {step:4d} | loss {loss.item():.4f} | {10 / dt:.1f} it/s | {dt * 100:.1f} ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
