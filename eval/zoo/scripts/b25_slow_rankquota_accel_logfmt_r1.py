"""Churn model (MLP on tabular features) under accelerate, DDP over gloo on CPU; the main process logs logfmt lines
(key=value) every 20 steps for the team's log shipper."""
import time

import torch
import torch.nn as nn
from accelerate import Accelerator


def logfmt(**kv):
    print(" ".join(f"{k}={v}" for k, v in {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "level": "info", **kv}.items()),
          flush=True)


def main():
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(120, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = accelerator.prepare(model, opt)
    g = torch.Generator().manual_seed(accelerator.process_index)
    total = 600
    if accelerator.is_main_process:
        logfmt(msg="start", processes=accelerator.num_processes, steps=total, batch=256)
    t_last = time.time()
    for step in range(1, total + 1):
        x = torch.randn(256, 120, generator=g)
        y = (x[:, :3].sum(1, keepdim=True) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 20 == 0 and accelerator.is_main_process:
            dt = (time.time() - t_last) / 20
            t_last = time.time()
            logfmt(step=f"{step}/{total}", loss=f"{loss.item():.4f}", step_ms=f"{dt * 1000:.1f}",
                   samples_per_s=f"{256 * accelerator.num_processes / dt:.0f}")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        logfmt(msg="done", steps=total)
    accelerator.end_training()


if __name__ == "__main__":
    main()
