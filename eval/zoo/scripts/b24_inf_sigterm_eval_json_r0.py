"""Speech-command classifier (1-D conv over log-mel frames), DDP over gloo; python logging with a JSON formatter (one
record per line, the cluster's log pipeline indexes them); a validation pass after every epoch."""
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class JsonFormatter(logging.Formatter):
    def format(self, r):
        return json.dumps({"ts": self.formatTime(r, "%Y-%m-%dT%H:%M:%S"), "level": r.levelname, "logger": r.name,
                           "rank": int(os.environ.get("RANK", 0)), "msg": r.getMessage()})


h = logging.StreamHandler()
h.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("kws.train")


def batches(rank, n, seed):
    g = torch.Generator().manual_seed(seed * 10 + rank)
    for _ in range(n):
        yield torch.randn(64, 40, 98, generator=g), torch.randint(0, 12, (64,), generator=g)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 128, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 12))
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("train shard speech-commands-v2/part-%d: 120 batches/epoch, val 60 batches", rank)
    for epoch in range(3):
        model.train()
        t0 = time.time()
        for step, (x, y) in enumerate(batches(rank, 120, epoch), 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 30 == 0:
                log.info("epoch %d step %d/120 loss %.4f", epoch, step, loss.item())
        log.info("epoch %d train done in %.1fs, evaluation started", epoch, time.time() - t0)
        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            for x, y in batches(rank, 60, 100 + epoch):
                pred = model(x).argmax(1)
                correct += torch.tensor([(pred == y).sum().item(), len(y)])
        dist.all_reduce(correct)
        log.info("epoch %d val_acc %.4f", epoch, (correct[0] / correct[1]).item())
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
