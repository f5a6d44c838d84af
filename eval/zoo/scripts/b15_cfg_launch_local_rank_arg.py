"""Sequence tagger for product titles, adapted from an older reference repo: argparse takes --local_rank (as
torch.distributed.launch used to pass it), DDP over gloo; logging with asctime."""
import argparse
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s -   %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = logging.getLogger(__name__)


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", default="data/titles")
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=3e-4)
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--local_rank", type=int, default=-1, help="local_rank for distributed training")
    return parser.parse_args()


def main():
    args = get_args()
    if args.local_rank != -1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    logger.info("local_rank: %d, distributed training: %s", args.local_rank, bool(args.local_rank != -1))
    model = nn.Sequential(nn.Embedding(30000, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 9))
    if args.local_rank != -1:
        model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    for epoch in range(args.num_train_epochs):
        for step in range(200):
            x = torch.randint(0, 30000, (args.train_batch_size, 24))
            y = x % 9
            loss = nn.functional.cross_entropy(model(x).reshape(-1, 9), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        logger.info("epoch %d loss %.4f", epoch, loss.item())
    if args.local_rank in (-1, 0):
        torch.save(model.state_dict(), os.path.join("outputs", "pytorch_model.bin"))


if __name__ == "__main__":
    main()
