"""Autoencoder on sensor windows; DDP over gloo; python logging with timestamps."""
import logging

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(message)s")
    log = logging.getLogger("ae")
    torch.manual_seed(rank)
    enc = nn.Sequential(nn.Linear(384, 1024), nn.Tanh(), nn.Linear(1024, 64))
    dec = nn.Sequential(nn.Linear(64, 1024), nn.Tanh(), nn.Linear(1024, 384))
    model = nn.parallel.DistributedDataParallel(nn.Sequential(enc, dec))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info("starting training: 600 steps, batch 256")
    for step in range(1, 601):
        x = torch.sin(torch.linspace(0, 12, 384) * (1 + torch.rand(256, 1))) + 0.05 * torch.randn(256, 384)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step} recon_loss {loss.item():.5f}")
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
