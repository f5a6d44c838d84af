import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    time.sleep(2)
    model = DDP(torch.nn.Linear(2048, 2048))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    batch = 64
    for step in range(12):
        x = torch.randn(batch, 2048)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} batch {batch} loss {loss.item():.4f}", flush=True)
        batch *= 2  # batch size warmup
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
