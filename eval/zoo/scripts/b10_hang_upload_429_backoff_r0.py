"""Click-through-rate model; rank 0 uploads a checkpoint to the team's S3-compatible object store every 100 steps
(plain HTTP PUT against the store's endpoint, with a retry helper that honours Retry-After)."""
import datetime
import io
import logging
import os
import time
import urllib.error
import urllib.request

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("ctr")
ENDPOINT = os.environ.get("S3_ENDPOINT", "http://127.0.0.1:9000")
BUCKET = "ml-checkpoints/ctr-dcn-v2"


def put_with_retry(key, data, retries=5):
    url = f"{ENDPOINT}/{BUCKET}/{key}"
    for attempt in range(1, retries + 1):
        try:
            req = urllib.request.Request(url, data=data, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            if e.code in (429, 503) and attempt < retries:
                wait = int(e.headers.get("Retry-After", 2 ** attempt))
                log.warning("PUT %s: HTTP %d %s, retrying in %ds (attempt %d/%d)", key, e.code, e.reason, wait,
                            attempt, retries)
                time.sleep(wait)
                continue
            raise


class DCN(nn.Module):
    def __init__(self, n_fields=16, vocab=20000, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.cross = nn.Linear(n_fields * d, n_fields * d)
        self.deep = nn.Sequential(nn.Linear(n_fields * d, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, x):
        e = self.emb(x).flatten(1)
        return self.deep(e + e * self.cross(e)).squeeze(1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    model = DDP(DCN())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 1001):
        x = torch.randint(0, 20000, (256, 16), generator=g)
        y = (x[:, 0] % 7 == 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("rank %d step %d/1000 logloss %.4f %.1f ms/step", rank, step, loss.item(),
                     (time.time() - t) * 50)
            t = time.time()
        if step % 100 == 0 and rank == 0:
            buf = io.BytesIO()
            torch.save({"model": model.module.state_dict(), "step": step}, buf)
            status = put_with_retry(f"step_{step:06d}.pt", buf.getvalue())
            log.info("uploaded s3://%s/step_%06d.pt (%d bytes, HTTP %d)", BUCKET, step, buf.tell(), status)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
