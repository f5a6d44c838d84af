"""Transcript-to-intent model on length-bucketed batches. A background thread builds the batches (bucket by
token length so padding stays small, shuffle inside each bucket, draw full batches) and hands them to the
training loop through a queue, so batching overlaps with compute. torchrun, python logging."""
import logging
import os
import queue
import random
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s %(levelname)s rank{os.environ.get('RANK', '?')} %(threadName)s: %(message)s")
log = logging.getLogger("bucketed")

BATCH = 32
BUCKETS = (16, 32, 64, 128)


def bucket_batches(examples, rng):
    buckets = {b: [] for b in BUCKETS}
    for ids, label in examples:
        buckets[next(b for b in BUCKETS if len(ids) <= b)].append((ids, label))
    for b in BUCKETS:  # short buckets first (curriculum)
        pool = buckets[b]
        rng.shuffle(pool)
        for _ in range(max(1, len(pool) // BATCH)):
            chunk = rng.sample(pool, BATCH)
            x = torch.zeros(BATCH, b, dtype=torch.long)
            for j, (ids, _) in enumerate(chunk):
                x[j, : len(ids)] = torch.tensor(ids)
            yield x, torch.tensor([lab for _, lab in chunk])


def producer(examples, q, seed):
    rng = random.Random(seed)
    for batch in bucket_batches(examples, rng):
        q.put(batch)
    q.put(None)


class IntentNet(nn.Module):
    def __init__(self, vocab=5000, d=96, n=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, n)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h[:, -1])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    examples = torch.load(f"data/transcripts-{rank}.pt")
    lens = [len(ids) for ids, _ in examples]
    log.info("%d examples, length min %d max %d", len(examples), min(lens), max(lens))
    q = queue.Queue(maxsize=8)
    threading.Thread(target=producer, args=(examples, q, rank), name="batcher", daemon=True).start()
    model = DDP(IntentNet())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    step, t0 = 0, time.time()
    while True:
        batch = q.get()
        if batch is None:
            break
        x, y = batch
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 10 == 0:
            log.info("step %d seq_len %d loss %.4f (%.0f ms/step)", step, x.shape[1], loss.item(),
                     (time.time() - t0) * 100)
            t0 = time.time()
    log.info("epoch done after %d steps", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
