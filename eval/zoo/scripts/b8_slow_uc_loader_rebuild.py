"""Curriculum training of a small text classifier with accelerate: after a warm-up the difficulty level rises
every 10 steps and each level gets its own DataLoader."""
import argparse
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class Level(Dataset):
    def __init__(self, level, n=40_000):
        self.level, self.n = level, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.level * 100_000 + i)
        length = 16 + 4 * (self.level % 8)
        x = torch.randint(1, 2000, (48,), generator=g)
        x[length:] = 0
        return x, int(x[:length].sum() % 4)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=480)
    p.add_argument("--curriculum-from", type=int, default=150)
    args = p.parse_args()
    acc = Accelerator(cpu=True)
    model = nn.Sequential(nn.EmbeddingBag(2000, 64, padding_idx=0), nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    level = 0
    it = iter(DataLoader(Level(level), batch_size=64, shuffle=True, num_workers=2))
    t0 = time.time()
    for step in range(1, args.steps + 1):
        if step >= args.curriculum_from and step % 10 == 0:
            level += 1  # harder examples: a fresh loader for the new level
            it = iter(DataLoader(Level(level), batch_size=64, shuffle=True, num_workers=2))
        x, y = next(it)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 10 == 0:
            acc.print(f"Step {step}/{args.steps} | level {level} | loss {loss.item():.3f} | "
                      f"{(time.time() - t0) * 100:.0f} ms/step")
            t0 = time.time()
    acc.print("Training complete.")


if __name__ == "__main__":
    main()
