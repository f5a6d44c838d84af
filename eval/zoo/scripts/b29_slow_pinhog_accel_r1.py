"""Demand-forecast model (GRU over 48 weeks of sales features), launched with accelerate on 2 CPU processes.
Each process prints its own progress every 50 iterations."""
import time

import torch
import torch.nn as nn
from accelerate import Accelerator

ITERS = 1600
BATCH = 64


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(24, 96, batch_first=True)
        self.head = nn.Linear(96, 4)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    p = acc.process_index
    print(f"p{p} | ready | {acc.num_processes} processes", flush=True)
    t0 = time.time()
    for it in range(1, ITERS + 1):
        x = torch.randn(BATCH, 48, 24, generator=g)
        y = torch.randn(BATCH, 4, generator=g)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if it % 50 == 0:
            dt = (time.time() - t0) / 50
            print(f"p{p} | it {it}/{ITERS} | loss {loss.item():.4f} | {dt * 1000:.1f} ms/it | "
                  f"{BATCH / dt:.0f} series/s", flush=True)
            t0 = time.time()
    acc.wait_for_everyone()
    if acc.is_main_process:
        print("p0 | finished", flush=True)


if __name__ == "__main__":
    main()
