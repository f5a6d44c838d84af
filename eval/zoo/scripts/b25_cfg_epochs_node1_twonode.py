"""POS tagger (embedding + GRU), DDP over gloo on two nodes (one process each); an accuracy all-reduce after every
epoch; python logging with asctime and the node's rank."""
import argparse
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.out = nn.Linear(64, 17)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank, node = dist.get_rank(), int(os.environ.get("GROUP_RANK", 0))
    logging.basicConfig(format=f"%(asctime)s [node{node} rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("pos")
    log.info("epochs=%d steps_per_epoch=%d batch_size=%d", args.epochs, args.steps_per_epoch, args.batch_size)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(args.epochs):
        t0 = time.time()
        for step in range(1, args.steps_per_epoch + 1):
            x = torch.randint(0, 20000, (args.batch_size, 32), generator=g)
            y = x % 17
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                log.info("epoch %d step %d/%d loss %.4f", epoch, step, args.steps_per_epoch, loss.item())
        with torch.no_grad():
            x = torch.randint(0, 20000, (256, 32), generator=g)
            correct = torch.tensor([(model(x).argmax(-1) == x % 17).float().mean().item()])
        dist.all_reduce(correct)
        log.info("epoch %d done in %.1fs, dev accuracy %.4f", epoch, time.time() - t0, correct.item() / dist.get_world_size())
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
