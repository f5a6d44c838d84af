"""Click-through model fed by the team's feature service: each process fetches its batches over HTTP
(<url from configs/features.json>/shard-<rank>/batch-<n>). accelerate (CPU, gloo), 2 processes. Transient errors of the feature service
are retried with exponential backoff."""
import json
import logging
import time
import urllib.error
import urllib.request
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from accelerate.logging import get_logger

log = get_logger("ctr")


def fetch_batch(base, shard, n, retries=8):
    url = f"{base}/shard-{shard}/batch-{n:05d}"
    for attempt in range(retries):
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                d = json.load(r)
            return torch.tensor(d["x"]), torch.tensor(d["y"])
        except urllib.error.HTTPError as e:
            wait = 2 ** attempt
            log.warning(f"GET {url}: HTTP {e.code} {e.reason}, retry {attempt + 1}/{retries} in {wait}s",
                        main_process_only=False)
            time.sleep(wait)
    raise RuntimeError(f"feature service unavailable for {url}")


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    base = json.load(open("configs/features.json"))["url"]
    model = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    t0 = time.time()
    for n in range(1, 401):
        x, y = fetch_batch(base, acc.process_index, n)
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if n % 25 == 0:
            log.info(f"batch {n}/400 loss {loss.item():.4f} ({(time.time() - t0) * 40:.1f} ms/batch)",
                     main_process_only=False)
            t0 = time.time()
    acc.print("done")


if __name__ == "__main__":
    main()
