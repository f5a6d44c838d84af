"""Two-stage pipeline-parallel MLP (hand-written 1F1B schedule over torch.distributed send/recv), gloo, 2 ranks.
Stage 0 holds the embedding and the first blocks, stage 1 the rest and the loss."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

MICRO, MB_SIZE, HIDDEN = 4, 16, 256


def build(stage):
    torch.manual_seed(stage)
    if stage == 0:
        return nn.Sequential(nn.Linear(64, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HIDDEN), nn.GELU())
    return nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, 10))


def evaluate(stage, model, batches):
    """Forward-only pass: stage 0 streams activations, stage 1 returns the mean loss."""
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            if stage == 0:
                dist.send(model(x), dst=1)
            else:
                act = torch.empty(x.shape[0], HIDDEN)
                dist.recv(act, src=0)
                total += nn.functional.cross_entropy(model(act), y).item()
    return total / len(batches)


def train_step(stage, model, micro):
    """1F1B: warm-up forwards, then one forward / one backward alternating, then cool-down backwards."""
    num_warmup = min(stage, MICRO)  # stages before the last run (num_stages - stage - 1) forwards first
    inputs, outputs, losses = [], [], []

    def forward(i):
        x, y = micro[i]
        if stage == 0:
            out = model(x)
            dist.send(out.detach(), dst=1)
        else:
            act = torch.empty(x.shape[0], HIDDEN)
            dist.recv(act, src=0)
            act.requires_grad_()
            out = nn.functional.cross_entropy(model(act), y) / MICRO
            losses.append(out.item())
            inputs.append(act)
        outputs.append(out)

    def backward(i):
        if stage == 0:
            grad = torch.empty_like(outputs[i])
            dist.recv(grad, src=1)
            outputs[i].backward(grad)
        else:
            outputs[i].backward()
            dist.send(inputs[i].grad, dst=0)

    for i in range(num_warmup):
        forward(i)
    for i in range(MICRO - num_warmup):
        forward(i + num_warmup)
        backward(i)
    for i in range(MICRO - num_warmup, MICRO):
        backward(i)
    return sum(losses)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    stage = dist.get_rank()
    model = build(stage)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    print(f"stage {stage}: {sum(p.numel() for p in model.parameters())} params, {MICRO} micro-batches of {MB_SIZE}")
    g = torch.Generator().manual_seed(0)
    val = [(torch.randn(MB_SIZE, 64, generator=g), torch.randint(0, 10, (MB_SIZE,), generator=g)) for _ in range(8)]
    val_loss = evaluate(stage, model, val)
    if stage == 1:
        print(f"initial val loss {val_loss:.4f}")
    t0 = time.time()
    for step in range(1, 301):
        micro = [(torch.randn(MB_SIZE, 64, generator=g), torch.randint(0, 10, (MB_SIZE,), generator=g))
                 for _ in range(MICRO)]
        opt.zero_grad()
        loss = train_step(stage, model, micro)
        opt.step()
        if stage == 1 and step % 20 == 0:
            print(f"step {step} loss {loss:.4f} {(time.time() - t0) / 20 * 1000:.1f} ms/step")
            t0 = time.time()
    print(f"stage {stage}: done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
