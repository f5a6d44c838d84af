"""Review-sentiment model, DDP over gloo, 2 ranks; each rank reads its shard of raw reviews (data/reviews-<rank>.jsonl)
and tokenizes on the fly with the team's word-level tokenizer (first 64 tokens)."""
import json
import re
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn

WORD = re.compile(r"[a-z0-9']+")
VOCAB = 20000
STEPS = 300


def tokenize(text):
    ids = [zlib.crc32(w.encode()) % (VOCAB - 2) + 2 for w in WORD.findall(text.lower())]
    return (ids + [0] * 64)[:64]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    f = open(f"data/reviews-{rank}.jsonl")
    t_data = t_comp = 0.0
    for step in range(1, STEPS + 1):
        t0 = time.time()
        rows = [json.loads(f.readline()) for _ in range(32)]
        x = torch.tensor([tokenize(r["text"]) for r in rows])
        y = torch.tensor([r["stars"] >= 4 for r in rows], dtype=torch.long)
        t1 = time.time()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.time()
        t_data += t1 - t0
        t_comp += t2 - t1
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} data {t_data / 20 * 1000:.1f} ms "
                  f"compute {t_comp / 20 * 1000:.1f} ms", flush=True)
            t_data = t_comp = 0.0
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
