"""Hand-rolled data parallel (gradients averaged with all_reduce) with a periodic parameter-consistency check."""
import argparse
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(message)s")
log = logging.getLogger("dp")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 128), nn.ReLU())
        self.head = nn.Linear(128, 5)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--check-every", type=int, default=100)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed + rank)  # different dropout masks / augmentation per rank
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 40)
        y = (x[:, :5].argmax(1))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
            prm.grad /= world
        opt.step()
        if step % 20 == 0:
            log.info("rank %d step %d/%d loss %.4f", rank, step, args.steps, loss.item())
        if step % args.check_every == 0:
            flat = torch.cat([q.detach().flatten() for q in model.parameters()])
            ref = flat.clone()
            dist.broadcast(ref, src=0)
            diff = (flat - ref).abs().max().item()
            if diff > 1e-6:
                raise RuntimeError(f"rank {rank}: parameters diverged from rank 0 at step {step} "
                                   f"(max abs diff {diff:.3e})")
            log.info("rank %d step %d: parameters consistent across %d ranks", rank, step, world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
