import math

import torch
import torch.nn as nn
from accelerate import Accelerator


class Classifier(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)

    def forward(self, x, pad_mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        att = att.softmax(dim=-1)
        att.masked_fill_(pad_mask[:, None, :], 0.0)  # drop attention to padding
        h = self.proj(att @ v)
        return self.head(h.mean(1))


def main():
    acc = Accelerator(cpu=True)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for step in range(20):
        x = torch.randn(8, 16, 64)
        pad = torch.zeros(8, 16, dtype=torch.bool)
        pad[:, 12:] = True
        loss = nn.functional.cross_entropy(model(x, pad), torch.randint(0, 2, (8,)))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        acc.print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
