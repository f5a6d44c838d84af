"""Small causal LM (2-layer transformer, vocabulary of the team's BPE tokenizer) on DDP, 2 ranks, c10d rendezvous.
The corpus is pre-tokenized into flat uint16 token files (data/tokens-<rank>.bin, nanoGPT style), one per rank, read
in contiguous blocks of CTX+1 tokens."""
import datetime
import json
import math
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

TOK = json.load(open("tokenizer/config.json"))
VOCAB, CTX = TOK["vocab_size"], 32


class Blocks(Dataset):
    def __init__(self, path):
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")

    def __len__(self):
        return (len(self.tokens) - 1) // (CTX + 1)

    def __getitem__(self, i):
        b = torch.from_numpy(self.tokens[i * (CTX + 1):(i + 1) * (CTX + 1)].astype(np.int64))
        return b[:-1], b[1:]


class TinyLM(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(CTX, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CTX), persistent=False)

    def forward(self, idx):
        h = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        return self.head(self.blocks(h, mask=self.mask, is_causal=True))


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds = Blocks(f"data/tokens-{rank}.bin")
loader = DataLoader(ds, batch_size=16, shuffle=False, drop_last=True)
torch.manual_seed(0)
model = DDP(TinyLM())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
print(f"[rank{rank}] tokenizer {TOK['name']} vocab {VOCAB}; data/tokens-{rank}.bin: {len(ds.tokens):,} tokens, "
      f"{len(loader)} steps", flush=True)
t0 = time.time()
for step, (x, y) in enumerate(loader):
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] step {step:4d} | loss {loss.item():.3f} | ppl {math.exp(loss.item()):8.1f} | "
              f"{(time.time() - t0) / (step + 1) * 1000:.0f} ms/step", flush=True)
dist.barrier()
print(f"[rank{rank}] finished", flush=True)
dist.destroy_process_group()
