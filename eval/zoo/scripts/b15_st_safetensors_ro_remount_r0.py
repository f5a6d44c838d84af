"""Keyword-spotting model (MLP over 40x49 MFCC frames), DDP over gloo, 2 ranks. Rank 0 writes the weights as
safetensors to ckpt/ every 100 steps, then all ranks meet in a barrier."""
import os
import time
from datetime import datetime, timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from safetensors.torch import save_file
from torch.nn.parallel import DistributedDataParallel as DDP


def ts():
    return datetime.now().strftime("%H:%M:%S")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(40 * 49, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    os.makedirs("ckpt", exist_ok=True)
    t0 = time.time()
    for step in range(1, 601):
        x = torch.randn(64, 40, 49)
        y = (x[:, :4, :10].mean((1, 2)) > 0).long() * 3 + (x[:, 20, :].mean(1) > 0).long()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"{ts()} rank {rank} step {step}/600 loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 1000 / 25:.1f} ms/step", flush=True)
            t0 = time.time()
        if step % 100 == 0:
            if rank == 0:
                path = f"ckpt/kws-step{step:06d}.safetensors"
                sd = {k: v.contiguous() for k, v in model.module.state_dict().items()}
                save_file(sd, path, metadata={"step": str(step)})
                print(f"{ts()} rank 0 saved {path}", flush=True)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
