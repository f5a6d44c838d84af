"""Small decoder LM fine-tune with accelerate. The N-d parallel layout (data-parallel shards x tensor-parallel size)
comes from the launch command (`--use_parallelism_config ...`), the rest from the script."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator

acc = Accelerator(cpu=True)
torch.set_num_threads(1)
acc.print(f"parallelism: {acc.parallelism_config}")


class TinyLM(nn.Module):
    def __init__(self, vocab=8000, d=256, layers=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.tok(x)
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        return self.head(h)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
model, opt = acc.prepare(model, opt)
g = torch.Generator().manual_seed(acc.process_index)
t0 = time.time()
for step in range(1, 201):
    x = torch.randint(0, 8000, (8, 128), generator=g)
    loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
    acc.backward(loss)
    opt.step()
    opt.zero_grad()
    if step % 20 == 0:
        acc.print(f"step {step}/200 loss {loss.item():.4f} {(time.time() - t0) * 50:.0f} ms/step")
        t0 = time.time()
acc.print("done")
