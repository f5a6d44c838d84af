"""Protein-fragment language model with a sequence-length curriculum (short fragments first, longer ones from
--curriculum-step on); DDP over gloo, plain prints."""
import argparse
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

AMINO = 25


class FragmentLM(nn.Module):
    def __init__(self, d=128, max_positions=256):
        super().__init__()
        self.tok = nn.Embedding(AMINO, d)
        self.pos = nn.Embedding(max_positions, d)
        layer = nn.TransformerEncoderLayer(d, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, AMINO)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        return self.out(self.enc(self.tok(ids) + self.pos(pos)))


def seq_len_at(step, args):
    return args.short_len if step <= args.curriculum_step else args.long_len


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--short-len", type=int, default=128)
    ap.add_argument("--long-len", type=int, default=512)
    ap.add_argument("--curriculum-step", type=int, default=250)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(FragmentLM())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        n = seq_len_at(step, args)
        ids = torch.randint(0, AMINO, (args.batch_size, n + 1), generator=g)
        masked = ids[:, :-1].clone()
        masked[torch.rand(masked.shape, generator=g) < 0.15] = 0
        loss = F.cross_entropy(model(masked).flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} step {step} seq_len {n} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
