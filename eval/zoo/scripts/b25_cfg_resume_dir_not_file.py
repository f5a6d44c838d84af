"""Conformer-style speech command model, DDP over gloo; resumes from --resume when given. HF-examples-style logging."""
import argparse
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = logging.getLogger(__name__)


def build_model():
    return nn.Sequential(nn.Conv1d(40, 144, 3, padding=1), nn.GELU(), nn.Conv1d(144, 144, 3, padding=1), nn.GELU(),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(144, 35))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--resume", default=None)
    p.add_argument("--max-steps", type=int, default=8000)
    p.add_argument("--lr", type=float, default=5e-4)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logger.info("rank %d: args %s", rank, vars(args))
    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        logger.info("rank %d: resuming from %s", rank, args.resume)
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        logger.info("rank %d: resumed at step %d", rank, start)
    model = nn.parallel.DistributedDataParallel(model)
    for step in range(start + 1, args.max_steps + 1):
        x, y = torch.randn(32, 40, 98), torch.randint(0, 35, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            logger.info("step %d loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
