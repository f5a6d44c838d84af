"""News-topic classifier (embedding bag + MLP over a 20k hashed vocabulary), DDP over gloo, 2 ranks. A tqdm bar
on rank 0; rank 0 writes a full checkpoint (model + optimizer) every 100 steps."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

VOCAB, CLASSES, STEPS = 20000, 40, 600


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.EmbeddingBag(VOCAB, 256, mode="mean"), nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, CLASSES)))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("checkpoints", exist_ok=True)
    print(f"rank {rank}/{world} ready, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params", flush=True)
    bar = tqdm(range(1, STEPS + 1), desc="train", disable=rank != 0, mininterval=1.0)
    for step in bar:
        x = torch.randint(0, VOCAB, (64, 48), generator=g)
        y = torch.randint(0, CLASSES, (64,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if step % 100 == 0 and rank == 0:
            t0 = time.time()
            path = f"checkpoints/step_{step:05d}.pt"
            torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
            tqdm.write(f"saved {path} ({os.path.getsize(path) / 1e6:.0f} MB, {time.time() - t0:.1f}s)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
