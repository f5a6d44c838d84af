"""Accelerate training loop with a preemption handler: on SIGTERM save a checkpoint and exit cleanly."""
import os
import signal
import sys
import time

import torch
import torch.nn as nn
from accelerate import Accelerator

accelerator = Accelerator(cpu=True)
STOP = {"requested": False}


def on_sigterm(signum, frame):
    STOP["requested"] = True
    print(f"[process {accelerator.process_index}] received signal {signum}, will checkpoint and exit", flush=True)


signal.signal(signal.SIGTERM, on_sigterm)


def main():
    model = nn.Sequential(nn.Linear(96, 192), nn.ReLU(), nn.Linear(192, 96))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = accelerator.prepare(model, opt)
    g = torch.Generator().manual_seed(accelerator.process_index)
    t0 = time.time()
    for step in range(1, 2001):
        x = torch.randn(64, 96, generator=g)
        loss = (model(x) - x).pow(2).mean()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 25 == 0:
            accelerator.print(f"step {step} loss {loss.item():.4f} {(time.time() - t0) / 25 * 1000:.1f} ms/step")
            t0 = time.time()
        if STOP["requested"]:
            path = f"preempt_ckpt/process_{accelerator.process_index}"
            os.makedirs(path, exist_ok=True)
            torch.save({"step": step, "model": accelerator.unwrap_model(model).state_dict()}, f"{path}/state.pt")
            print(f"[process {accelerator.process_index}] saved {path} at step {step}, exiting", flush=True)
            sys.exit(0)
    accelerator.print("training done")


if __name__ == "__main__":
    main()
