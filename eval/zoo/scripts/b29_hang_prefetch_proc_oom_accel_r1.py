"""Keyword-spotting model on log-mel clips, launched with accelerate on 2 CPU processes. Each process decodes its
clips in a background prefetch process (decoded clips are memoised, so later epochs skip the decoding) and takes
ready batches from a queue."""
import datetime
import logging
import multiprocessing as mp

import numpy as np
import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger("kws")
BATCH, N_CLIPS, EPOCHS = 32, 8192, 3


def decode(clip_id):
    rng = np.random.default_rng(clip_id)
    return rng.standard_normal((64, 400), dtype=np.float32), int(rng.integers(12))


def prefetch(q, shard, seed):
    cache = {}
    rng = np.random.default_rng(seed)
    for _ in range(EPOCHS):
        order = rng.permutation(shard)
        for i in range(0, len(order) - BATCH + 1, BATCH):
            xs, ys = [], []
            for c in order[i:i + BATCH]:
                if c not in cache:
                    cache[c] = decode(int(c))
                x, y = cache[c]
                xs.append(x)
                ys.append(y)
            q.put((np.stack(xs), np.array(ys)))
    q.put(None)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    p = acc.process_index
    shard = np.arange(N_CLIPS)[p::acc.num_processes]
    q = mp.get_context("fork").Queue(maxsize=8)
    worker = mp.get_context("fork").Process(target=prefetch, args=(q, shard, p), daemon=True)
    worker.start()
    log.info("process %d: %d clips, prefetch pid %d", p, len(shard), worker.pid)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(64, 96, 5, stride=2), nn.ReLU(), nn.Conv1d(96, 96, 5, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(96, 12))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    step = 0
    while (item := q.get()) is not None:
        x, y = torch.from_numpy(item[0]), torch.from_numpy(item[1])
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        step += 1
        if step % 20 == 0:
            log.info("process %d: step %d epoch %.2f loss %.4f", p, step, step * BATCH / len(shard), loss.item())
    acc.wait_for_everyone()
    log.info("process %d: finished %d steps", p, step)


if __name__ == "__main__":
    main()
