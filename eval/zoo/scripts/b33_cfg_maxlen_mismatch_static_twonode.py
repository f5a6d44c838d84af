"""Title encoder (transformer, learned positions) for duplicate-listing detection, DDP over gloo, one process per
node. Model size and sequence length come from the command line."""
import argparse
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("dedup")


class Encoder(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4, dim * 2, batch_first=True), 2)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.size(1)))
        return F.normalize(self.enc(h).mean(1), dim=-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--dim", type=int, default=96)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d args %s", rank, world, vars(args))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Encoder(args.vocab, args.dim, args.max_len))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        a = torch.randint(0, args.vocab, (32, 24), generator=g)
        b = a.clone()
        b[:, ::5] = torch.randint(0, args.vocab, (32, 5), generator=g)
        za, zb = model(a), model(b)
        loss = F.cross_entropy(za @ zb.T / 0.05, torch.arange(32))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 25 == 0:
            log.info("step %d/%d loss %.4f %.0f ms/step", step, args.steps, loss.item(),
                     (time.time() - t0) / step * 1000)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
