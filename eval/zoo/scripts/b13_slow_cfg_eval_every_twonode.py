"""Two-stage training of a tabular risk model, DDP over gloo on two nodes. Each stage reads its own YAML
(configs/stage1.yaml, configs/stage2.yaml): steps, learning rate, how often to run validation."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("risk")


@torch.no_grad()
def validate(model, xv, yv):
    model.eval()
    loss = nn.functional.binary_cross_entropy_with_logits(model(xv).squeeze(1), yv).item()
    model.train()
    return loss


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(56000, 96, generator=g)
    y = (x[:, :8].sum(1) + 0.3 * torch.randn(56000, generator=g) > 0).float()
    xv, yv = x[-32000:], y[-32000:]
    model = DDP(nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step, best = 0, float("inf")
    for stage in (1, 2):
        cfg = yaml.safe_load(open(f"configs/stage{stage}.yaml"))
        for grp in opt.param_groups:
            grp["lr"] = cfg["lr"]
        log.info("stage %d: %s", stage, cfg)
        t0 = time.time()
        for _ in range(cfg["steps"]):
            step += 1
            idx = torch.randint(0, 24000, (128,), generator=g)
            loss = nn.functional.binary_cross_entropy_with_logits(model(x[idx]).squeeze(1), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % cfg["eval_every"] == 0:
                v = validate(model.module, xv, yv)
                if v < best - 1e-3:
                    best = v
                    if rank == 0:
                        torch.save(model.module.state_dict(), "best.pt")
            if step % 25 == 0:
                log.info("step %d loss %.4f best_val %.4f %.1f ms/step", step, loss.item(), best,
                         (time.time() - t0) * 40)
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
