"""Churn model on tabular features, DDP over gloo, 3 ranks; checkpoint every 200 steps from rank 0."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("churn")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(60000, 96, generator=g)
    y = ((x[:, :8].sum(1) + 0.3 * torch.randn(60000, generator=g)) > 0).float()
    sampler = DistributedSampler(TensorDataset(x, y), shuffle=True)
    dl = DataLoader(TensorDataset(x, y), batch_size=128, sampler=sampler, drop_last=True)
    model = DDP(nn.Sequential(nn.Linear(96, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    os.makedirs("checkpoints", exist_ok=True)
    log.info(f"[rank{rank}] {len(dl)} batches per epoch, world {world}")
    step, t0 = 0, time.time()
    for epoch in range(6):
        sampler.set_epoch(epoch)
        for xb, yb in dl:
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 25 == 0:
                log.info(f"[rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f} "
                         f"{(time.time() - t0) / 25 * 1000:.0f} ms/step")
                t0 = time.time()
            if step % 200 == 0:
                if rank == 0:
                    torch.save({"model": model.module.state_dict(), "step": step}, f"checkpoints/step{step}.pt")
                    log.info(f"[rank0] saved checkpoints/step{step}.pt")
                dist.barrier()
    log.info(f"[rank{rank}] finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
