"""Code-search encoder (token embeddings + 2-layer transformer, mean pooled, in-batch contrastive loss), DDP over
gloo. Each rank reads its shard's pre-tokenized chunks cache/shard-<rank>/chunk-*.pt (written by the tokenize job)."""
import datetime
import glob
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

RANK = int(os.environ["RANK"])
VOCAB, MAXLEN = 16000, 256


def load_shard(rank):
    files = sorted(glob.glob(f"cache/shard-{rank}/chunk-*.pt"))
    parts = [torch.load(f) for f in files]
    code = torch.cat([p["code_ids"] for p in parts])
    query = torch.cat([p["query_ids"] for p in parts])
    return code, query, len(files)


class Encoder(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, MAXLEN, d))
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 256, batch_first=True), 2)

    def forward(self, ids):
        h = self.enc(self.emb(ids) + self.pos[:, : ids.size(1)])
        m = (ids != 0).unsqueeze(-1).float()
        return nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    t0 = time.time()
    code, query, nfiles = load_shard(RANK)
    print(f"rank {RANK}: loaded {code.size(0)} pairs from {nfiles} chunks in {time.time() - t0:.1f}s", flush=True)
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(RANK)
    for step in tqdm(range(300), disable=RANK != 0, mininterval=2):
        idx = torch.randint(0, code.size(0), (32,), generator=g)
        c, q = model(code[idx][:, :128]), model(query[idx][:, :32])
        loss = nn.functional.cross_entropy(q @ c.T / 0.05, torch.arange(32))
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
