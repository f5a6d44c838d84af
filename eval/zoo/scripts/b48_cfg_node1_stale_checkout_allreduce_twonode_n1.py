"""Character-level language model (small transformer encoder with a causal mask) trained with data parallelism across
two nodes, 2 processes per node. Every process builds the model from the same seed, so no initial broadcast; gradients
are averaged with one flat all-reduce per step (one message instead of one per parameter)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

REVISION = "a41f9c2 (lm: widen to d_model 256)"
D_MODEL, N_LAYERS, N_HEADS, VOCAB, CTX = 256, 2, 4, 96, 64

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(CTX, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, 2 * D_MODEL, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, N_LAYERS)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.head(self.body(self.emb(x) + self.pos[: x.shape[1]], mask=mask, is_causal=True))


model = CharLM()
params = [p for p in model.parameters()]
n_params = sum(p.numel() for p in params)
print(f"[node{node} rank{rank}] train_lm.py rev {REVISION}: d_model={D_MODEL} layers={N_LAYERS} "
      f"params={n_params}", flush=True)
opt = torch.optim.AdamW(params, lr=3e-4)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    x = torch.randint(0, VOCAB, (16, CTX + 1), generator=g)
    x[:, 1::2] = (x[:, 0:-1:2] + 1) % VOCAB
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    if step % 25 == 0:
        print(f"[node{node} rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
