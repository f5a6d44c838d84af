"""Small bf16 language model (character-level, 2-layer transformer) trained with hand-written data parallelism on
3 ranks: each rank computes its gradients and they are averaged with one all-reduce per parameter, as in the
PyTorch distributed tutorial. The model is kept in bfloat16 (precision: bf16 in the config); rank 0 evaluates the
held-out perplexity every 50 steps."""
import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

text = open("data/corpus.txt").read()
vocab = sorted(set(text))
ids = torch.tensor([vocab.index(c) for c in text])
split = int(len(ids) * 0.9)
train_ids, val_ids = ids[:split], ids[split:]


class CharLM(nn.Module):
    def __init__(self, v, d=128, ctx=64):
        super().__init__()
        self.tok = nn.Embedding(v, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, v)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(ctx))

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.out(self.blocks(h, mask=self.mask.to(h.dtype), is_causal=True))


model = CharLM(len(vocab)).to(torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)


def batch(src, n=16, ctx=64, gen=None):
    ix = torch.randint(0, len(src) - ctx - 1, (n,), generator=gen)
    return torch.stack([src[i:i + ctx] for i in ix]), torch.stack([src[i + 1:i + ctx + 1] for i in ix])


def average_gradients(m):
    for p in m.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world


def evaluate(m):
    # full precision for the reported number
    m.eval().float()
    with torch.no_grad():
        x, y = batch(val_ids, 64, gen=torch.Generator().manual_seed(0))
        loss = F.cross_entropy(m(x).flatten(0, 1), y.flatten())
    m.train()
    return math.exp(loss.item())


for step in range(1, 301):
    x, y = batch(train_ids, gen=g)
    loss = F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())
    opt.zero_grad()
    loss.backward()
    average_gradients(model)
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0 and step % 50 == 0:
        print(f"rank 0 step {step} val_ppl {evaluate(model):.2f}", flush=True)
dist.destroy_process_group()
