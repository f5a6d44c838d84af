"""Denoising MLP on synthetic spectra, DDP (gloo). Plain logging.basicConfig(level=INFO)."""
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(level=logging.INFO)
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(300, 600), nn.SiLU(), nn.Linear(600, 600),
                                                              nn.SiLU(), nn.Linear(600, 300)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    base = torch.linspace(0, 1, 300)
    for step in range(1, 601):
        t0 = time.perf_counter()
        clean = torch.sin(base * 20 * torch.rand(256, 1)) * torch.exp(-base)
        noisy = clean + 0.1 * torch.randn_like(clean)
        loss = nn.functional.mse_loss(model(noisy), clean)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d loss %.5f time/step %.1fms", step, loss.item(), (time.perf_counter() - t0) * 1000)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
