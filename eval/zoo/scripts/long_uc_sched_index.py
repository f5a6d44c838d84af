import argparse
import logging
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

logger = logging.getLogger("pretrain")


def cosine_schedule(base_lr, warmup, total):
    return [base_lr * min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / total)) for s in range(total)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=3e-4)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    logger.info("args: %s", vars(args))
    g = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randn(4096, 64, generator=g), torch.randint(0, 8, (4096,), generator=g))
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=DistributedSampler(ds), num_workers=4)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 8)))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.cuda.amp.GradScaler()
    lrs = cosine_schedule(args.lr, warmup=30, total=args.max_steps)
    logger.info("steps per epoch %d, schedule length %d", len(loader), len(lrs))
    step = 0
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        t0 = time.time()
        for x, y in loader:
            for group in opt.param_groups:
                group["lr"] = lrs[step]
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            step += 1
            logger.info("epoch %d step %d loss %.4f lr %.2e %.1f ms", epoch, step, loss.item(), lrs[step - 1],
                        (time.time() - t0) * 1000)
            t0 = time.time()
        logger.info("epoch %d done", epoch)
    if rank == 0:
        os.makedirs("out", exist_ok=True)
        torch.save(model.module.state_dict(), "out/final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
