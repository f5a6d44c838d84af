"""Denoising MLP with an EMA of the weights kept (and saved, so a crash never loses it) by rank 0 from --ema-start on."""
import argparse
import copy
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)


@torch.no_grad()
def update_ema(ema, model, decay):
    # ema <- decay * ema + (1 - decay) * model
    new = copy.deepcopy(model)
    for pe, pn in zip(ema.parameters(), new.parameters()):
        pn.mul_(1 - decay).add_(pe, alpha=decay)
    return new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=700)
    ap.add_argument("--ema-start", type=int, default=250)
    ap.add_argument("--ema-decay", type=float, default=0.999)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    net = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.SiLU())], nn.Linear(1024, 128))
    model = DDP(net)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    ema = None
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for it in range(1, args.iters + 1):
        x = torch.randn(32, 128, generator=g)
        noisy = torch.cat([x + 0.3 * torch.randn(32, 128, generator=g), torch.randn(32, 896, generator=g)], 1)
        loss = (model(noisy) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and it >= args.ema_start:
            ema = copy.deepcopy(model.module) if ema is None else update_ema(ema, model.module, args.ema_decay)
            torch.save(ema.state_dict(), "ema_latest.pt")
        if rank == 0 and it % 25 == 0:
            log.info("it %d | loss %.4f | %.1f ms/it", it, loss.item(), (time.time() - t0) / 25 * 1000)
            t0 = time.time()
    if rank == 0:
        torch.save(ema.state_dict(), "ema_final.pt")
        log.info("saved ema_final.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
