"""Byte-level language-model pretraining (small transformer encoder) on DDP, 3 ranks. Text is tokenized on the fly by
the team's native tokenizer (native/libtok.so via ctypes, fast and thread-safe by a global lock); each rank reads its
own corpus part (corpus/part-R.txt) and logs JSON records to logs/rank-R.jsonl."""
import ctypes
import datetime
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
os.makedirs("logs", exist_ok=True)
_logf = open(f"logs/rank-{RANK}.jsonl", "a", buffering=1)


def jlog(level, msg, **kw):
    _logf.write(json.dumps({"ts": datetime.datetime.now().isoformat(timespec="milliseconds"), "rank": RANK,
                            "level": level, "msg": msg, **kw}) + "\n")


VOCAB, CTX, BATCH, STEPS = 8000, 48, 16, 300
_tok = ctypes.CDLL("native/libtok.so")
_tok.tok_encode.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.POINTER(ctypes.c_int), ctypes.c_long]
_tok.tok_encode.restype = ctypes.c_long


def encode(line: bytes):
    out = (ctypes.c_int * CTX)()
    n = _tok.tok_encode(line, len(line), out, CTX)
    if n < 0:
        return None
    ids = list(out[:n]) + [0] * (CTX - n)
    return ids


def batches(path):
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    buf = []
    for i, line in enumerate(lines):
        ids = encode(line)
        if ids is None:
            jlog("WARNING", "skipping undecodable line", file=path, line=i + 1)
            continue
        buf.append(ids)
        if len(buf) == BATCH:
            yield torch.tensor(buf)
            buf = []


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(64, VOCAB)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    jlog("INFO", "start", world_size=dist.get_world_size(), corpus=f"corpus/part-{RANK}.txt")
    t = time.time()
    try:
        for step, x in enumerate(batches(f"corpus/part-{RANK}.txt"), 1):
            mask = torch.rand(x.shape) < 0.15
            logits = model(x.masked_fill(mask, 1))
            loss = F.cross_entropy(logits[mask], x[mask])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                jlog("INFO", "train", step=step, loss=round(loss.item(), 4), sec_per_step=round((time.time() - t) / 10, 3))
                t = time.time()
            if step == STEPS:
                break
    except Exception as e:
        jlog("ERROR", "training failed", error=f"{type(e).__name__}: {e}")
        raise
    jlog("INFO", "done")


if __name__ == "__main__":
    main()
