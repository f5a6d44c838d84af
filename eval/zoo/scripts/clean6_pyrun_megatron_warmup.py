"""Tiny GPT pretraining with Megatron-style iteration logs: lr warm-up, a lazily built sample index, checkpoints."""
import argparse
import os
import time
from datetime import datetime

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def print_rank_0(msg):
    if dist.get_rank() == 0:
        print(msg, flush=True)


class GPTDataset(torch.utils.data.Dataset):
    """Token stream cut into samples; the shuffled sample index is built on first access (as Megatron's is)."""

    def __init__(self, n_tokens, seq, seed):
        self.tokens = np.random.default_rng(seed).integers(0, 2048, n_tokens, dtype=np.int64)
        self.seq, self.seed, self.index = seq, seed, None

    def build_index(self):
        rng = np.random.default_rng(self.seed)
        starts = np.arange(0, len(self.tokens) - self.seq - 1)
        docs = np.sort(rng.choice(len(self.tokens), 40_000, replace=False))
        keep = starts[np.searchsorted(docs, starts) == np.searchsorted(docs, starts + self.seq)]
        self.index = rng.permutation(keep)

    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        if self.index is None:
            self.build_index()
        s = self.index[i % len(self.index)]
        return torch.from_numpy(self.tokens[s:s + self.seq + 1])


class GPT(nn.Module):
    def __init__(self, vocab=2048, d=128, layers=2, seq=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.blocks(h, mask=self.mask, is_causal=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train-iters", type=int, default=800)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--lr-warmup-iters", type=int, default=100)
    p.add_argument("--micro-batch-size", type=int, default=8)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save-interval", type=int, default=250)
    p.add_argument("--save", default="checkpoints/gpt-tiny")
    args = p.parse_args()
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    torch.manual_seed(1234)
    print_rank_0(f"> initialized data parallel with size {world}")
    print_rank_0("> building train dataset ...")
    ds = GPTDataset(2_000_000, 64, seed=dist.get_rank())
    loader = iter(torch.utils.data.DataLoader(ds, batch_size=args.micro_batch_size,
                                              sampler=range(10**8)))
    model = DDP(GPT())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    print_rank_0(f" > number of parameters: {sum(p.numel() for p in model.parameters())}")
    print_rank_0(f"[before the start of training step] datetime: {datetime.now():%Y-%m-%d %H:%M:%S}")
    gbs = args.micro_batch_size * world
    t = time.time()
    for it in range(1, args.train_iters + 1):
        lr = args.lr * min(1.0, it / args.lr_warmup_iters)
        for group in opt.param_groups:
            group["lr"] = lr
        batch = next(loader)
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if it % args.log_interval == 0:
            el = (time.time() - t) * 1000 / args.log_interval
            print_rank_0(f" iteration {it:8d}/{args.train_iters:8d} | consumed samples: {it * gbs:12d} | "
                         f"elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.3E} | "
                         f"global batch size: {gbs:5d} | lm loss: {loss.item():.6E} | loss scale: 1.0 | "
                         f"grad norm: {gn:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
            t = time.time()
        if it % args.save_interval == 0:
            print_rank_0(f"saving checkpoint at iteration {it:7d} to {args.save}")
            if dist.get_rank() == 0:
                d = os.path.join(args.save, f"iter_{it:07d}", "mp_rank_00")
                os.makedirs(d, exist_ok=True)
                torch.save({"iteration": it, "model": model.module.state_dict(), "optimizer": opt.state_dict()},
                           os.path.join(d, "model_optim_rng.pt"))
                with open(os.path.join(args.save, "latest_checkpointed_iteration.txt"), "w") as f:
                    f.write(str(it))
            dist.barrier()
            print_rank_0(f"  successfully saved checkpoint at iteration {it:7d} to {args.save}")
    print_rank_0(f"[after training is done] datetime: {datetime.now():%Y-%m-%d %H:%M:%S}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
