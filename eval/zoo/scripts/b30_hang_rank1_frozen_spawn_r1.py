"""Time-series anomaly autoencoder, DDP over gloo under torch.multiprocessing.spawn (2 processes, tcp:// init,
30 s collective timeout); '[HH:MM:SS] pR step N ...' prints every 100 steps."""
import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def say(rank, msg):
    print(f"[{time.strftime('%H:%M:%S')}] p{rank} {msg}", flush=True)


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Linear(96, 64), nn.Tanh(), nn.Linear(64, 16), nn.Tanh(), nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 96)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    say(rank, "training 4000 steps")
    t0 = time.time()
    for step in range(1, 4001):
        x = torch.sin(torch.linspace(0, 12, 96) + torch.rand(256, 1, generator=g) * 6) \
            + 0.05 * torch.randn(256, 96, generator=g)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            say(rank, f"step {step} recon {loss.item():.5f} ({(time.time() - t0) * 10:.1f} ms/step)")
            t0 = time.time()
    say(rank, "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
