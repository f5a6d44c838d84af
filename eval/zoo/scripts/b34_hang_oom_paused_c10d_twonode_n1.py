"""Audio-event classifier on precomputed log-mel features, DDP over gloo, one process per node. Features are
computed on first use and memoised per clip id (the clip pool is sampled with replacement, so a clip comes back
often and the cache saves the FFTs)."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

_feats = {}


def features(clip_id):
    if clip_id not in _feats:
        g = torch.Generator().manual_seed(clip_id)
        wav = torch.randn(16000, generator=g)
        spec = torch.stft(wav, 512, 256, window=torch.hann_window(512), return_complex=True).abs()[:96]
        _feats[clip_id] = torch.log1p(spec[:, :63]).flatten().clone()
    return _feats[clip_id]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(96 * 63, 512), nn.ReLU(), nn.Linear(512, 50)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    print(f"[node {os.environ['GROUP_RANK']} rank {rank}] start", flush=True)
    t0 = time.time()
    for step in range(1, 1001):
        ids = torch.randint(0, 2_000_000, (64,), generator=g).tolist()
        x = torch.stack([features(i) for i in ids])
        y = torch.tensor([i % 50 for i in ids])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[node {os.environ['GROUP_RANK']} rank {rank}] step {step} loss {loss.item():.4f} "
                  f"cached {len(_feats)} clips {(time.time() - t0) / 50 * 1000:.0f} ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
