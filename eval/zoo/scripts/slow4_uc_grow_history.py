"""Contrastive embedding model; from step 150 the script tracks 'embedding diversity' of each batch
against everything seen so far."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    enc = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 128)))
    opt = torch.optim.AdamW(enc.parameters(), lr=5e-4)
    seen = []  # all embeddings so far, for the diversity metric
    t0 = time.time()
    for it in range(1, 641):
        x = torch.randn(64, 128)
        z1 = F.normalize(enc(x + 0.05 * torch.randn_like(x)), dim=1)
        z2 = F.normalize(enc(x + 0.05 * torch.randn_like(x)), dim=1)
        logits = z1 @ z2.T / 0.1
        loss = F.cross_entropy(logits, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it > 150:
            seen.append(z1.detach())
            allz = torch.cat(seen)
            diversity = 1 - (z1.detach() @ allz.T).mean().item()
        if it % 20 == 0:
            extra = f" div {diversity:.3f}" if it > 150 else ""
            print(f"rank {rank}: iter {it} loss {loss.item():.3f}{extra} time {(time.time() - t0) / 20:.3f}s")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
