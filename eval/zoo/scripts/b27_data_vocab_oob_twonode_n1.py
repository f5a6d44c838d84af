"""Causal LM fine-tuning on pre-tokenized shards, DDP over gloo, two nodes with one process each; each rank reads
the shard of its rank from the data directory."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

VOCAB, SEQ, BS = 32000, 64, 8


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.head = nn.Linear(64, VOCAB)

    def forward(self, x):
        return self.head(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    shard = np.load(f"data/tokens/shard-{rank:03d}-of-{world:03d}.npy", mmap_mode="r")
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank}: shard {shard.shape[0]} sequences", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(1, shard.shape[0] // BS + 1):
        x = torch.from_numpy(np.array(shard[(step - 1) * BS:step * BS], dtype=np.int64))
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[{time.strftime('%H:%M:%S')}] rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
