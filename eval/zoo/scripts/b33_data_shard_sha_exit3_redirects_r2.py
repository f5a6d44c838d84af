"""Small causal LM (2-layer transformer) pretraining on pre-tokenized shards, DDP over gloo, 3 ranks. Every rank
verifies its shard against the dataset manifest before training and refuses a shard that does not match."""
import hashlib
import json
import logging
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s | %(levelname)-7s | rank%(rank)s | %(message)s", level=logging.INFO)
VOCAB, CTX = 8192, 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 128)
        self.pos = nn.Parameter(torch.zeros(CTX, 128))
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(128, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.out(self.enc(self.emb(x) + self.pos[: x.size(1)], mask=mask, is_causal=True))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log = logging.LoggerAdapter(logging.getLogger("pretrain"), {"rank": rank})
    manifest = json.load(open("data/manifest.json"))
    path = f"data/shard-{rank:05d}.bin"
    log.info("verifying %s (%d bytes)", path, manifest[path]["bytes"])
    digest = sha256(path)
    if digest != manifest[path]["sha256"]:
        log.error("checksum mismatch for %s: expected %s, got %s", path, manifest[path]["sha256"][:16], digest[:16])
        sys.exit(3)
    tokens = torch.from_numpy(np.fromfile(path, dtype=np.int32).astype(np.int64))
    log.info("%s ok: %d tokens", path, tokens.numel())
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        idx = torch.randint(0, tokens.numel() - CTX - 1, (16,), generator=g)
        x = torch.stack([tokens[i:i + CTX] for i in idx])
        y = torch.stack([tokens[i + 1:i + CTX + 1] for i in idx])
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/200 loss %.3f %.0f ms/step", step, loss.item(), (time.time() - t0) / step * 1000)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
