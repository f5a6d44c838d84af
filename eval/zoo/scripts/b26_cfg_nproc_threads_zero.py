"""Churn model (gradient-boosting features into an MLP), DDP over gloo; the team's template splits the node's cores
evenly between the local processes for intra-op parallelism. Launched with the template's torchrun line."""
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("churn")


def main():
    local_world = int(os.environ["LOCAL_WORLD_SIZE"])
    torch.set_num_threads(os.cpu_count() // local_world)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d started", rank, world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(120, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 401):
        x = torch.randn(256, 120, generator=g)
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), (x[:, 0] > 0).float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 and rank == 0:
            log.info("step %d/400 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
