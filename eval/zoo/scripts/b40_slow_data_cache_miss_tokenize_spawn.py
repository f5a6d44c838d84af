"""Masked-LM pre-training of a small encoder on support-chat transcripts, DDP over gloo, started with
`python pretrain_mlm.py` (torch.multiprocessing.spawn). Each rank streams its shards in order: the pre-tokenised
cache (cache/shard-R-JJ.pt, written by the preprocessing job) when it is there, else the raw transcripts
(raw/shard-R-JJ.jsonl), tokenised on the fly with the same greedy WordPiece."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

SEQ, BATCH, SHARDS = 64, 16, 8


def load_vocab():
    pieces = [line.rstrip("\n") for line in open("vocab.txt")]
    return {p: i for i, p in enumerate(pieces)}


def wordpiece(text, vocab, unk=1):
    ids = []
    for word in text.split():
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    ids.append(vocab[piece])
                    break
                end -= 1
            else:
                ids.append(unk)
                break
            start = end
    return ids


def shard_batches(rank, j, vocab):
    cached = f"cache/shard-{rank}-{j:02d}.pt"
    if os.path.exists(cached):
        toks = torch.load(cached)
        for i in range(0, len(toks), BATCH):
            yield toks[i:i + BATCH]
        return
    print(f"[rank {rank}] WARNING cache miss for {cached}, tokenizing raw/shard-{rank}-{j:02d}.jsonl on the fly",
          flush=True)
    batch = []
    for line in open(f"raw/shard-{rank}-{j:02d}.jsonl"):
        ids = wordpiece(json.loads(line)["text"], vocab)[:SEQ]
        batch.append(ids + [0] * (SEQ - len(ids)))
        if len(batch) == BATCH:
            yield torch.tensor(batch)
            batch = []


class Encoder(nn.Module):
    def __init__(self, vocab_size, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True), 1)
        self.lm = nn.Linear(d, vocab_size)

    def forward(self, x):
        return self.lm(self.enc(self.emb(x)))


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    vocab = load_vocab()
    model = DDP(Encoder(len(vocab)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    step, t_win, data_s = 0, time.time(), 0.0
    for j in range(SHARDS):
        it = shard_batches(rank, j, vocab)
        while True:
            t_d = time.time()
            x = next(it, None)
            data_s += time.time() - t_d
            if x is None:
                break
            mask = (torch.rand(x.shape) < 0.15) & (x > 0)
            inp = x.masked_fill(mask, 2)
            loss = F.cross_entropy(model(inp)[mask], x[mask])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 20 == 0:
                print(f"[rank {rank}] step {step} shard {j} mlm_loss {loss.item():.3f} "
                      f"step_ms {(time.time() - t_win) * 50:.1f} data_ms {data_s * 50:.1f}", flush=True)
                t_win, data_s = time.time(), 0.0
    print(f"[rank {rank}] finished {step} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(os.environ.get("MASTER_PORT", "29500"))), nprocs=2)
