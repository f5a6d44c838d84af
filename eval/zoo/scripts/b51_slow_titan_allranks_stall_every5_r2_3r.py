"""Small Llama-style decoder for the code-completion experiment, pre-trained on tokenised source files with a
trainer forked from torchtitan: its
logger ('[titan] ... - root - INFO - ...'), its metrics line per step (loss, memory, tps, tflops, mfu) and its
periodic GC. Colour printing off (metrics.disable_color_printing). Launched with torchrun --role rank --tee 3 and
no rank filter: every rank logs its own metrics line."""
import gc
import logging
import math
import os
import resource
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logger = logging.getLogger()


def init_logger():
    logger.setLevel(logging.INFO)
    ch = logging.StreamHandler()
    ch.setLevel(logging.INFO)
    ch.setFormatter(logging.Formatter("[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s"))
    logger.addHandler(ch)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.w1, self.w2, self.w3 = (nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False),
                                     nn.Linear(d, 4 * d, bias=False))
        self.h = h

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(a)
        y = self.n2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class Transformer(nn.Module):
    def __init__(self, vocab=4096, d=96, layers=3, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.out = nn.RMSNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, t):
        x = self.tok(t)
        for blk in self.layers:
            x = blk(x)
        return self.out(self.norm(x))


def main():
    init_logger()
    dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    logger.info(f"Starting job: llama3 debugmodel_code training (world size {world}, gloo)")
    model = Transformer()
    n_params = sum(p.numel() for p in model.parameters())
    logger.info(f"Model llama3 debugmodel_code size: {n_params:,} total parameters")
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=8e-4)
    seq, bs, steps, gc_freq, log_freq = 96, 4, 100, 50, 1
    peak_flops = 400e9  # the team's figure for one CPU socket share
    flops_per_token = 6 * n_params
    logger.info(f"Training starts at step 1, with local batch size {bs}, global batch size {bs * world}, "
                f"sequence length {seq}, total steps {steps} (warmup 10)")
    g = torch.Generator().manual_seed(100 + rank)
    gc.disable()
    t_last, ntokens = time.perf_counter(), 0
    for step in range(1, steps + 1):
        if step > 1 and step % gc_freq == 1:
            t0 = time.perf_counter()
            gc.collect(1)
            logger.info(f"[GC] Peforming periodical GC collection. {time.perf_counter() - t0:.2f} seconds.")
        tokens = torch.randint(0, 4096, (bs, seq + 1), generator=g)
        for grp in opt.param_groups:
            grp["lr"] = 8e-4 * min(1.0, step / 10)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ntokens += bs * seq
        if step % log_freq == 0:
            lt = loss.detach().clone()
            dist.all_reduce(lt)
            dt = time.perf_counter() - t_last
            tps = ntokens / dt
            mfu = 100 * flops_per_token * tps / peak_flops
            tflops = flops_per_token * tps / 1e12
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            logger.info(f"step: {step:2}  loss: {lt.item() / world:7.4f}  memory: {rss:5.2f}GiB({100 * rss / 8:.2f}%)  "
                        f"tps: {round(tps):,}  tflops: {tflops:,.2f}  mfu: {mfu:.2f}%")
            t_last, ntokens = time.perf_counter(), 0
    logger.info("Sleeping 2 seconds for other ranks to complete")
    time.sleep(2)
    logger.info("Training completed")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
