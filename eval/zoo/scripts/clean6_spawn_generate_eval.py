"""Seq2seq-style digit-reversal GRU trained with torch.multiprocessing.spawn; every 150 steps each rank evaluates by
greedy decoding (token by token, much slower per sample than a training step) and rank 0 saves a checkpoint.
Every rank logs with asctime."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD, STEPS, EVAL_EVERY, LOG_EVERY, SEQ, V = 2, 600, 150, 25, 12, 12  # tokens 0-9, 10 = BOS, 11 = pad


class Seq2Seq(nn.Module):
    def __init__(self, h=160):
        super().__init__()
        self.emb = nn.Embedding(V, 64)
        self.enc = nn.GRU(64, h, batch_first=True)
        self.dec = nn.GRU(64, h, batch_first=True)
        self.out = nn.Linear(h, V)

    def forward(self, src, tgt_in):
        _, hid = self.enc(self.emb(src))
        y, _ = self.dec(self.emb(tgt_in), hid)
        return self.out(y)

    @torch.no_grad()
    def greedy(self, src):
        _, hid = self.enc(self.emb(src))
        tok = torch.full((src.shape[0], 1), 10)
        outs = []
        for _ in range(SEQ):
            y, hid = self.dec(self.emb(tok), hid)
            tok = self.out(y).argmax(-1)
            outs.append(tok)
        return torch.cat(outs, 1)


def batch(g, n):
    src = torch.randint(0, 10, (n, SEQ), generator=g)
    tgt = src.flip(1)
    return src, torch.cat([torch.full((n, 1), 10), tgt[:, :-1]], 1), tgt


def run(rank):
    torch.set_num_threads(1)
    logging.basicConfig(format=f"%(asctime)s [rank {rank}] %(levelname)s: %(message)s", level=logging.INFO)
    log = logging.getLogger("s2s")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ.get('ZOO_PORT', '29500')}",
                            rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = DDP(Seq2Seq())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("ckpt", exist_ok=True)
    t = time.time()
    for step in range(1, STEPS + 1):
        src, tin, tgt = batch(g, 64)
        loss = nn.functional.cross_entropy(model(src, tin).reshape(-1, V), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            log.info(f"step {step}/{STEPS} loss {loss.item():.4f} ({(time.time() - t) / LOG_EVERY * 1000:.1f} ms/step)")
            t = time.time()
        if step % EVAL_EVERY == 0:
            te = time.time()
            gv = torch.Generator().manual_seed(1000 + rank)
            right = torch.zeros(2)
            src, _, tgt = batch(gv, 96)
            for i in range(96):  # one sequence at a time, as the downstream service decodes
                right += torch.tensor([float((model.module.greedy(src[i:i + 1]) == tgt[i:i + 1]).all()), 1.0])
            dist.all_reduce(right)
            log.info(f"eval step {step}: exact match {right[0] / right[1]:.3f} (greedy decoding, {time.time() - te:.2f}s)")
            if rank == 0:
                torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()},
                           f"ckpt/s2s_step{step}.pt")
                log.info(f"checkpoint written: ckpt/s2s_step{step}.pt")
            dist.barrier()
            t = time.time()
    log.info("training complete")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, nprocs=WORLD)
