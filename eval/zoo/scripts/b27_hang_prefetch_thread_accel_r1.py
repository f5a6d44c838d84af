"""Query-intent classifier trained with accelerate; each process streams its own part of the click log through a
background prefetch thread (parse + tensorize off the training thread). JSON-lines logging for the log shipper."""
import json
import logging
import queue
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs

VOCAB, INTENTS, BS = 30000, 48, 64


class JsonFormatter(logging.Formatter):
    def format(self, rec):
        return json.dumps({"ts": self.formatTime(rec, "%Y-%m-%dT%H:%M:%S"), "level": rec.levelname,
                           "logger": rec.name, **getattr(rec, "fields", {}), "msg": rec.getMessage()})


h = logging.StreamHandler(sys.stdout)
h.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("intent")


def prefetch(path, q):
    buf_x, buf_y = [], []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            buf_x.append(rec["q"][:16] + [0] * (16 - len(rec["q"][:16])))
            buf_y.append(rec["intent"])
            if len(buf_x) == BS:
                q.put((torch.tensor(buf_x), torch.tensor(buf_y)))
                buf_x, buf_y = [], []
    q.put(None)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    r = acc.process_index
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, INTENTS))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    model, opt = acc.prepare(model, opt)
    q = queue.Queue(maxsize=8)
    threading.Thread(target=prefetch, args=(f"clicklog/part-{r:05d}.jsonl", q), name=f"prefetch-{r}",
                     daemon=True).start()
    step, t0 = 0, time.time()
    while True:
        item = q.get()
        if item is None:
            break
        x, y = item
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        step += 1
        if step % 25 == 0:
            log.info("train", extra={"fields": {"process": r, "step": step, "loss": round(loss.item(), 4),
                                                "step_ms": round((time.time() - t0) / 25 * 1000, 1)}})
            t0 = time.time()
    acc.wait_for_everyone()
    log.info("finished", extra={"fields": {"process": r, "steps": step}})


if __name__ == "__main__":
    main()
