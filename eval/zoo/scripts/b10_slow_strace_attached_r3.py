"""Small LSTM language model, fairseq-style progress lines (log interval 25 updates, main process only)."""
import argparse
import datetime
import logging
import math
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", datefmt="%Y-%m-%d %H:%M:%S",
                    level=logging.INFO, stream=sys.stdout)
logger = logging.getLogger("fairseq_cli.train")
inner = logging.getLogger("train_inner")

V, E, H, T = 1000, 64, 128, 24


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.rnn, self.out = nn.Embedding(V, E), nn.LSTM(E, H, batch_first=True), nn.Linear(H, V)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-update", type=int, default=700)
    ap.add_argument("--log-interval", type=int, default=25)
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    if rank != 0:
        logging.getLogger().setLevel(logging.WARNING)
    logger.info(f"distributed init (rank {rank}): env://")
    logger.info(args)
    model = DDP(LSTMLM())
    logger.info(f"num. model params: {sum(p.numel() for p in model.parameters())}")
    logger.info(f"training on {world} devices (CPUs)")
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    stream = torch.randint(0, V, (400_000,), generator=g)
    start, t_win, losses, wall0 = time.time(), time.time(), [], time.time()
    steps_per_epoch = 700
    for upd in range(1, args.max_update + 1):
        ix = torch.randint(0, len(stream) - T - 1, (args.batch_size,), generator=g)
        x = torch.stack([stream[i:i + T] for i in ix])
        y = torch.stack([stream[i + 1:i + T + 1] for i in ix])
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        losses.append(loss.item())
        if upd % args.log_interval == 0:
            dt = time.time() - t_win
            t_win = time.time()
            l2 = sum(losses) / len(losses) / math.log(2)
            losses = []
            wpb = args.batch_size * T * world
            inner.info(f"epoch 001:  {upd:5d} / {steps_per_epoch} loss={l2:.3f}, ppl={2 ** l2:.2f}, "
                       f"wps={wpb * args.log_interval / dt:.1f}, ups={args.log_interval / dt:.2f}, wpb={wpb}, "
                       f"bsz={args.batch_size * world}, num_updates={upd}, lr={opt.param_groups[0]['lr']:g}, "
                       f"gnorm={gnorm:.3f}, train_wall={int(time.time() - start)}, gb_free=0, "
                       f"wall={int(time.time() - wall0)}")
    logger.info(f"end of epoch 1 (average epoch stats below)")
    logger.info(f"done training in {time.time() - start:.1f} seconds")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
