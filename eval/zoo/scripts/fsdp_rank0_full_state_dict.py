import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


def build():
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 64))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    return model


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(30):
        x = torch.randn(8, 64)
        loss = nn.functional.mse_loss(model(x), x)
        loss.backward()
        opt.step()
        opt.zero_grad()
    print(f"rank {rank}: training done, loss {loss.item():.4f}", flush=True)
    if rank == 0:
        # gather the sharded weights into a plain state dict for export
        full = {k: v.full_tensor() for k, v in model.state_dict().items()}
        os.makedirs("export", exist_ok=True)
        torch.save(full, "export/model.pt")
        print("exported export/model.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
