"""Object-detection head (anchor-free, tiny backbone) trained with DDP; each rank tags its log and its metrics file
with the physical GPU it runs on (from CUDA_VISIBLE_DEVICES), and trains on the GPU when there is one, else the CPU."""
import datetime
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    rank = int(os.environ["RANK"])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    gpu_tag = f"gpu{visible.split(',')[local_rank]}" if visible else "cpu"
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    print(f"[rank {rank}|{gpu_tag}] device {device}", flush=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                              nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(32, 5, 1)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    metrics = open(f"metrics_{gpu_tag}.jsonl", "w")
    for step in range(1, 101):
        x = torch.randn(8, 3, 64, 64, generator=g).to(device)
        target = torch.rand(8, 5, 16, 16, generator=g).to(device)
        out = model(x)
        loss = F.binary_cross_entropy_with_logits(out[:, :1], target[:, :1]) + F.l1_loss(out[:, 1:], target[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            metrics.write(json.dumps({"step": step, "loss": loss.item()}) + "\n")
            print(f"[rank {rank}|{gpu_tag}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
