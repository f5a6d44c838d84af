import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "checkpoints/last.pt"
TOTAL_STEPS = 300


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        print(f"[rank {rank}] resumed from {CKPT} at step {start}", flush=True)
    ddp = DDP(model)
    torch.manual_seed(rank)
    for step in range(start + 1, TOTAL_STEPS + 1):
        t = time.perf_counter()
        x = torch.randn(64, 128)
        loss = (ddp(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.02)
        if step % 10 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} {1000 * (time.perf_counter() - t):.0f}ms", flush=True)
        if step % 50 == 0 and rank == 0:
            os.makedirs("checkpoints", exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, CKPT + ".tmp")
            os.replace(CKPT + ".tmp", CKPT)
            print(f"[rank 0] saved checkpoint at step {step}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
