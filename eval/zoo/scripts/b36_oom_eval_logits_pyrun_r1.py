"""Small decoder LM (2 transformer layers, 16k-token vocabulary) on pre-tokenized text, DDP over gloo. Every 100
steps it evaluates perplexity and top-1 accuracy on a held-out set, keeping every batch's logits to compute both
at the end. Plain prints."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

V, D, T = 16000, 128, 64


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        layer = nn.TransformerEncoderLayer(D, 4, 256, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, V)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.head(self.body(h, mask=mask, is_causal=True))


def evaluate(model, val):
    model.eval()
    all_logits, all_targets = [], []
    with torch.no_grad():
        for i in range(0, len(val), 16):
            x = val[i:i + 16]
            all_logits.append(model(x[:, :-1]))
            all_targets.append(x[:, 1:])
    model.train()
    logits, targets = torch.cat(all_logits), torch.cat(all_targets)
    ppl = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)).exp().item()
    acc = (logits.argmax(-1) == targets).float().mean().item()
    return ppl, acc


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    train = torch.randint(0, V, (20000, T + 1), generator=g)
    val = torch.randint(0, V, (256, T + 1), generator=g)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    t0 = time.time()
    for step in range(1, 1001):
        x = train[(step * 8) % 19992:(step * 8) % 19992 + 8]
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) / 20 * 1000:.0f} ms/step")
            t0 = time.time()
        if step % 100 == 0:
            ppl, acc = evaluate(model.module, val)
            print(f"[rank {rank}] step {step} eval ppl {ppl:.1f} acc {acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
