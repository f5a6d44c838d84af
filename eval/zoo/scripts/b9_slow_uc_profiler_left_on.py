"""Tagger trained with accelerate; --profile-from starts torch.profiler to look at one step."""
import argparse
import time

import torch
import torch.nn as nn
from accelerate import Accelerator


class Tagger(nn.Module):
    def __init__(self, vocab=3000, d=64, tags=9, layers=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU()) for _ in range(layers))
        self.out = nn.Linear(d, tags)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = h + b(h)
        return self.out(h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=450)
    p.add_argument("--profile-from", type=int, default=150)
    args = p.parse_args()
    acc = Accelerator(cpu=True)
    model = Tagger()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    prof = None
    t = time.time()
    for step in range(1, args.steps + 1):
        if step == args.profile_from:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                          with_stack=True, profile_memory=True)
            prof.__enter__()  # TODO export a trace after a few steps
        x = torch.randint(0, 3000, (8, 32), generator=g)
        y = torch.randint(0, 9, (8, 32), generator=g)
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 9), y.reshape(-1))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 10 == 0:
            acc.print(f"step {step}/{args.steps} | loss {loss.item():.4f} | {(time.time() - t) * 100:.1f} ms/step")
            t = time.time()
    acc.wait_for_everyone()
    if prof is not None:
        prof.__exit__(None, None, None)
    acc.print("done")


if __name__ == "__main__":
    main()
