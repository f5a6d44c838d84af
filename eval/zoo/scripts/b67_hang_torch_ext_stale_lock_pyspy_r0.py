"""Tabular model with a fused row-scale op written as a C++ extension (torch.utils.cpp_extension.load_inline,
JIT-built into the team's shared extensions cache TORCH_EXTENSIONS_DIR). To avoid three compilers racing, local rank 0
builds it first and the other ranks load it after a barrier."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
torch::Tensor rowscale(torch::Tensor x, torch::Tensor s) { return x * s.unsqueeze(1); }
"""


def build_ext():
    return load_inline("fused_rowscale", cpp_sources=CPP, functions=["rowscale"], verbose=True)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.set_num_threads(1)
    t0 = time.time()
    if local_rank == 0:
        print(f"rank {rank}: building fused_rowscale in {os.environ['TORCH_EXTENSIONS_DIR']}", flush=True)
        ext = build_ext()
        dist.barrier()
    else:
        print(f"rank {rank}: waiting for local rank 0 to build fused_rowscale", flush=True)
        dist.barrier()
        ext = build_ext()
    print(f"rank {rank}: extension ready in {time.time() - t0:.1f}s", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.randn(256, 40, generator=g)
        x = ext.rowscale(x, torch.rand(256, generator=g) + 0.5)
        loss = F.mse_loss(model(x).squeeze(1), x[:, :3].sum(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} mse {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
