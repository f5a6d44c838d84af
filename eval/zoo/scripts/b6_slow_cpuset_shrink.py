"""Accelerate: small convnet on synthetic 48x48 images; the main process prints throughput every 20 steps."""
import time

import torch
import torch.nn as nn
from accelerate import Accelerator


def main():
    acc = Accelerator(cpu=True)
    model = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(24, 48, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(48, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    t0 = time.time()
    for step in range(1, 601):
        x = torch.randn(32, 3, 48, 48, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 20 == 0:
            dt = time.time() - t0
            acc.print(f"step {step}/600 | loss {loss.item():.3f} | {20 * 32 * acc.num_processes / dt:.0f} samples/s")
            t0 = time.time()
    acc.wait_for_everyone()
    acc.print("done")


if __name__ == "__main__":
    main()
