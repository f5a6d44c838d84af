"""Small GPT-style LM with tied input/output embeddings; gradients averaged by hand (no DDP: 'DDP did not like the tied weights')."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab=4000, d=96):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        self.block = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.ln(self.block(h)))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = TinyLM()
    # unique parameters only: the tied embedding would otherwise be all-reduced twice
    params = list(set(model.parameters()))
    for p in params:
        dist.broadcast(p.data, src=0)
    opt = torch.optim.AdamW(params, lr=3e-4)
    g = torch.Generator().manual_seed(100 + rank)
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randint(0, 4000, (8, 48), generator=g)
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 4000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        for p in params:
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} | loss {loss.item():.3f} | {time.time() - t0:.2f}s", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
