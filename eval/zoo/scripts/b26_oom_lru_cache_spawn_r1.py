"""Query-document relevance model, DDP over gloo under torch.multiprocessing.spawn. Each process streams its own part
of the click log; tokenization of the (often repeated) documents is memoised with functools.lru_cache."""
import functools
import logging
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

VOCAB, DIM, SEQ = 30000, 64, 256


def setup_logging(rank):
    fmt = f"%(asctime)s.%(msecs)03d | %(levelname)-8s | rank{rank} | %(module)s:%(funcName)s:%(lineno)d - %(message)s"
    logging.basicConfig(format=fmt, datefmt="%Y-%m-%d %H:%M:%S", level=logging.INFO, stream=sys.stdout)
    return logging.getLogger("ranker")


@functools.lru_cache(maxsize=None)
def tokenize(doc_id):
    # the document store returns the body; hashed word pieces, truncated/padded to SEQ, plus the raw body ids kept
    # for the highlight feature
    rng = np.random.default_rng(doc_id)
    body = rng.integers(0, VOCAB, size=2048, dtype=np.int64)
    return torch.from_numpy(body[:SEQ].copy()), torch.from_numpy(body)


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.q = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.out = nn.Linear(DIM, 1)

    def forward(self, q, d):
        return self.out(self.q(q) * self.emb(d)).squeeze(1)


def worker(rank, world, port):
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    log.info(f"process group ready ({rank}/{world})")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Ranker())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(100 + rank)
    t0 = time.time()
    for step in range(1, 1201):
        # half the clicks go to the head documents, the rest to the long tail (mostly seen once)
        docs = np.where(rng.random(32) < 0.5, rng.integers(0, 5000, size=32), rng.integers(0, 2_000_000, size=32))
        d = torch.stack([tokenize(int(x))[0] for x in docs])
        q = torch.from_numpy(rng.integers(0, VOCAB, size=(32, 8)))
        y = torch.from_numpy((rng.random(32) < 0.3).astype(np.float32))
        loss = nn.functional.binary_cross_entropy_with_logits(model(q, d), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info(f"step {step}/1200 loss {loss.item():.4f} {(time.time() - t0) * 1000 / 50:.1f} ms/step")
            t0 = time.time()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1])
    mp.spawn(worker, args=(2, port), nprocs=2)
