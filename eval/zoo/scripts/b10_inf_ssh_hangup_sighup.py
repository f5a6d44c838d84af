"""Denoising autoencoder on synthetic sensor windows, a small Trainer-style class, DDP over gloo."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S")
logger = logging.getLogger("dae_trainer")


class Trainer:
    def __init__(self, model, max_steps=3000, log_every=25):
        self.rank = dist.get_rank()
        self.model = DDP(model)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.max_steps, self.log_every = max_steps, log_every
        self.g = torch.Generator().manual_seed(self.rank)

    def batch(self):
        t = torch.linspace(0, 6.28, 128)
        clean = torch.sin(t[None] * torch.rand(64, 1, generator=self.g) * 4)
        return clean + 0.3 * torch.randn(64, 128, generator=self.g), clean

    def fit(self):
        t0 = time.time()
        for step in range(1, self.max_steps + 1):
            noisy, clean = self.batch()
            loss = nn.functional.mse_loss(self.model(noisy), clean)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if step % self.log_every == 0 and self.rank == 0:
                logger.info(f"step {step}/{self.max_steps} - loss {loss.item():.5f} - "
                            f"{(time.time() - t0) / self.log_every * 1000:.1f} ms/step")
                t0 = time.time()
        if self.rank == 0:
            torch.save(self.model.module.state_dict(), "dae_final.pt")
            logger.info("saved dae_final.pt")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 32), nn.ReLU(), nn.Linear(32, 256),
                          nn.ReLU(), nn.Linear(256, 128))
    Trainer(model).fit()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
