"""Churn model on the team's tabular library (tabkit's FT-Transformer), DDP over gloo, one worker per node on two
CPU nodes (static rendezvous). Each worker prints its environment at start so that mismatches show up in the logs."""
import os
import platform
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import tabkit


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {socket.gethostname()} (node {os.environ.get('GROUP_RANK')}): "
          f"python {platform.python_version()} torch {torch.__version__} tabkit {tabkit.__version__} "
          f"({os.path.dirname(tabkit.__file__)})", flush=True)
    torch.manual_seed(0)
    model = tabkit.FTTransformer(n_num=14, cat_cards=[12, 7, 31, 4], d=64, depth=3, n_out=1)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"rank {rank}: FTTransformer with {n_params:,} parameters", flush=True)
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    num = torch.randn(8192, 14, generator=g)
    cat = torch.stack([torch.randint(0, c, (8192,), generator=g) for c in (12, 7, 31, 4)], 1)
    y = (num[:, 0] + num[:, 3] * 0.5 > 0.2).float()
    t0 = time.time()
    for step in range(1, 301):
        idx = torch.randint(0, 8192, (128,), generator=g)
        loss = F.binary_cross_entropy_with_logits(model(num[idx], cat[idx]).squeeze(-1), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank}: step {step}/300 loss {loss.item():.4f} {(time.time() - t0) * 20:.0f} ms/step",
                  flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
