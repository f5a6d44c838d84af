"""Sentence-pair similarity model (a small transformer encoder) with accelerate; checkpoints with
accelerator.save_state every 500 steps under ckpt/, --resume-from continues a run from one of them."""
import argparse
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger("simcse")


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(8000, 128)
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)

    def forward(self, ids):
        return self.enc(self.emb(ids)).mean(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume-from", default="")
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = Encoder()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 200))
    model, opt, sched = acc.prepare(model, opt, sched)
    start = 0
    if args.resume_from:
        log.info("Resuming from %s", args.resume_from, main_process_only=False)
        acc.load_state(args.resume_from)
        start = int(args.resume_from.rstrip("/").rsplit("_", 1)[1])
    log.info("Training from step %d to %d", start, args.steps)
    g = torch.Generator().manual_seed(start + acc.process_index)
    for step in range(start + 1, args.steps + 1):
        a = torch.randint(0, 8000, (32, 24), generator=g)
        za, zb = model(a), model(a.roll(1, 1))
        logits = nn.functional.normalize(za, dim=1) @ nn.functional.normalize(zb, dim=1).T / 0.05
        loss = nn.functional.cross_entropy(logits, torch.arange(32))
        acc.backward(loss)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 500 == 0:
            acc.save_state(f"ckpt/step_{step}")


if __name__ == "__main__":
    main()
