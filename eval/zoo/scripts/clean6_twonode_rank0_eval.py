"""Sensor-anomaly autoencoder on two nodes (one process each); rank 0 evaluates every 200 steps while the other
ranks wait at a barrier."""
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, EVAL_EVERY, LOG_EVERY = 1000, 200, 50


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    host = socket.gethostname()
    tag = f"[{host}:rank{rank}]"
    torch.manual_seed(0)
    ae = nn.Sequential(nn.Linear(96, 1024), nn.Tanh(), nn.Linear(1024, 64), nn.Tanh(), nn.Linear(64, 1024), nn.Tanh(),
                       nn.Linear(1024, 96))
    model = DDP(ae)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    basis = torch.randn(8, 96, generator=torch.Generator().manual_seed(5))
    print(f"{tag} world size {world}, {STEPS} steps")
    t = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(256, 8, generator=g) @ basis + 0.05 * torch.randn(256, 96, generator=g)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            print(f"{tag} step {step}/{STEPS} recon_loss {loss.item():.5f} {(time.time() - t) / LOG_EVERY * 1e3:.2f}ms/step")
            t = time.time()
        if step % EVAL_EVERY == 0:
            if rank == 0:
                te = time.time()
                gv = torch.Generator().manual_seed(77)
                errs = []
                with torch.no_grad():
                    for _ in range(8):
                        xv = torch.randn(1024, 8, generator=gv) @ basis + 0.05 * torch.randn(1024, 96, generator=gv)
                        errs.append(((ae(xv) - xv) ** 2).mean(1))
                errs = torch.cat(errs)
                print(f"{tag} eval step {step}: val_recon {errs.mean():.5f} p99 {errs.quantile(0.99):.5f} "
                      f"({time.time() - te:.2f}s)")
            dist.barrier()
            t = time.time()
    dist.barrier()
    print(f"{tag} finished {STEPS} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
