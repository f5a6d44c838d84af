"""Image-patch denoiser: a tqdm bar per epoch on rank 0, then a validation loop (full-size images, slower per
batch than training); every rank writes its step timings to logs/timing.jsonl, validation records as kind=eval."""
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

EPOCHS, STEPS, VAL_BATCHES = 3, 200, 8


def net():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(16, 1, 3, padding=1))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(net())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("logs", exist_ok=True)
    feed = open("logs/timing.jsonl", "a")
    step = 0
    for epoch in range(1, EPOCHS + 1):
        for _ in tqdm(range(STEPS), desc=f"train {epoch}/{EPOCHS}", disable=rank != 0, mininterval=0.5):
            t0 = time.time()
            clean = torch.rand(16, 1, 24, 24, generator=g)
            noisy = clean + 0.2 * torch.randn(16, 1, 24, 24, generator=g)
            loss = nn.functional.mse_loss(model(noisy), clean)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            feed.write(json.dumps({"rank": rank, "step": step, "start": round(t0, 4), "end": round(time.time(), 4),
                                   "kind": "train"}) + "\n")
        model.eval()
        gv = torch.Generator().manual_seed(1000 + rank)
        total = 0.0
        with torch.no_grad():
            for _ in tqdm(range(VAL_BATCHES), desc=f"valid {epoch}/{EPOCHS}", disable=rank != 0):
                t0 = time.time()
                clean = torch.rand(12, 1, 72, 72, generator=gv)
                total += nn.functional.mse_loss(model.module(clean + 0.2 * torch.randn(clean.shape, generator=gv)),
                                                clean).item()
                feed.write(json.dumps({"rank": rank, "step": step, "start": round(t0, 4),
                                       "end": round(time.time(), 4), "kind": "eval"}) + "\n")
        model.train()
        val = torch.tensor([total / VAL_BATCHES])
        dist.all_reduce(val)
        if rank == 0:
            tqdm.write(f"epoch {epoch}: train loss {loss.item():.5f} valid loss {val.item() / dist.get_world_size():.5f}")
    feed.close()
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "denoiser.pt")
        print("done. model written to denoiser.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
