"""Token-classification (NER) tagger on pre-tokenised shards. torch.multiprocessing.spawn on one machine, a log
file per rank (logs/rank<R>.log). Every 10 steps each rank appends its row to one shared CSV
(metrics/train_metrics.csv) that the dashboard tails; a lock file keeps rows from interleaving."""
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD, TAGS, VOCAB = 3, 9, 12000
METRICS = "metrics/train_metrics.csv"
log = logging.getLogger("ner")


class FileLock:
    """Lock file holding the owner's pid; re-entrant for the owner (the file goes when the owner's last hold ends)."""

    def __init__(self, path):
        self.path = path
        self.depth = 0

    def acquire(self):
        announced = False
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                self.depth = 1
                return
            except FileExistsError:
                try:
                    holder = int(open(self.path).read() or 0)
                except (OSError, ValueError):
                    holder = 0
                if holder == os.getpid():
                    self.depth += 1
                    return
                if not announced:
                    log.info("waiting for %s (held by pid %d)", self.path, holder)
                    announced = True
                time.sleep(0.05)

    def release(self):
        self.depth -= 1
        if self.depth == 0:
            os.remove(self.path)


LOCK = FileLock(METRICS + ".lock")


def append_metrics(rank, step, loss, logits, labels):
    LOCK.acquire()
    try:
        valid = labels != -100
        acc = (logits.argmax(-1)[valid] == labels[valid]).sum().item() / valid.sum().item()
        with open(METRICS, "a") as fh:
            fh.write(f"{time.time():.3f},{rank},{step},{loss:.5f},{acc:.4f}\n")
        LOCK.release()
    except Exception as e:  # metrics must never stop training
        log.warning("metrics row skipped at step %d: %s: %s", step, type(e).__name__, e)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, TAGS)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def worker(rank, port):
    os.makedirs("logs", exist_ok=True)
    logging.basicConfig(filename=f"logs/rank{rank}.log", level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s rank{rank} pid %(process)d: %(message)s")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                           timeout=timedelta(seconds=20))
    shard = torch.load(f"data/ner_shard{rank}.pt")
    log.info("shard %d: %d sentences", rank, len(shard["tokens"]))
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    for step in range(1, 301):
        i = (step - 1) * 32
        x, y = shard["tokens"][i:i + 32], shard["tags"][i:i + 32]
        logits = model(x)
        n_valid = (y != -100).sum()
        loss = F.cross_entropy(logits.reshape(-1, TAGS), y.reshape(-1), ignore_index=-100,
                               reduction="sum") / n_valid.clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            append_metrics(rank, step, loss.item(), logits.detach(), y)
            log.info("step %d/300 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 100)
            t0 = time.time()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1])
    os.makedirs("metrics", exist_ok=True)
    print(f"launching {WORLD} ranks on tcp://127.0.0.1:{port}; per-rank logs in logs/", flush=True)
    mp.spawn(worker, args=(port,), nprocs=WORLD)
