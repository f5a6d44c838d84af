import datetime
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def tokenize(text, vocab):
    ids = []
    for w in text.lower().split():
        w = "".join(c for c in w if c.isalnum())
        ids.append(vocab.setdefault(w, len(vocab)) % 2048)
    return ids


def batches(path, vocab, bs=16, seq=64):
    with open(path) as f:
        docs = [json.loads(line)["text"] for line in f]
    for i in range(0, len(docs), bs):
        t = time.perf_counter()
        toks = [tokenize(d, vocab)[:seq] for d in docs[i:i + bs]]
        toks = [t_ + [0] * (seq - len(t_)) for t_ in toks]
        yield torch.tensor(toks), time.perf_counter() - t


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    vocab = {}
    model = DDP(nn.Sequential(nn.Embedding(2048, 64), nn.Flatten(), nn.Linear(64 * 64, 2048)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t_last, data_s = time.perf_counter(), 0.0
    for step, (ids, dt) in enumerate(batches(f"data/shard_{rank}.jsonl", vocab), 1):
        data_s += dt
        loss = nn.functional.cross_entropy(model(ids), ids[:, 0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            now = time.perf_counter()
            print(f"rank {rank} step {step} loss {loss.item():.3f} time_ms {(now - t_last) * 100:.1f} "
                  f"data_ms {data_s * 100:.1f}", flush=True)
            t_last, data_s = now, 0.0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
