"""Image-tagging model (multi-label, small CNN), DDP over gloo, 2 ranks, tqdm on rank 0.
Saves the final weights and a summary, then tears the process group down."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def cleanup():
    """Make sure every rank is done before the process group goes away."""
    dist.barrier()
    dist.destroy_process_group()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 20)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t_start = time.time()
    try:
        for epoch in range(5):
            bar = tqdm(range(300), desc=f"epoch {epoch}", disable=rank != 0, mininterval=1.0)
            for _ in bar:
                x = torch.randn(16, 3, 48, 48, generator=g)
                y = (torch.rand(16, 20, generator=g) < 0.15).float()
                loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                bar.set_postfix(loss=f"{loss.item():.4f}")
        if rank == 0:
            os.makedirs("out", exist_ok=True)
            torch.save(model.module.state_dict(), "out/tagger_final.pt")
            json.dump({"epochs": 5, "final_loss": loss.item()}, open("out/summary.json", "w"))
            print(f"training finished in {time.time() - t_start:.1f}s, weights in out/tagger_final.pt")
        cleanup()
    finally:
        cleanup()


if __name__ == "__main__":
    main()
