"""Sequence tagger (BiGRU) trained with accelerate; python logging with timestamps."""
import argparse
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator

logging.basicConfig(format="%(asctime)s | %(levelname)-8s | %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("tagger")


class Tagger(nn.Module):
    def __init__(self, vocab=3000, tags=9, d=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, tags)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps-per-epoch", type=int, default=150)
    ap.add_argument("--detect-anomaly-from-epoch", type=int, default=-1,
                    help="turn on autograd anomaly detection from this epoch (debugging NaNs)")
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    if not acc.is_main_process:
        log.setLevel(logging.WARNING)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), 2e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    step = 0
    for epoch in range(args.epochs):
        if epoch == args.detect_anomaly_from_epoch:
            torch.autograd.set_detect_anomaly(True)
            log.info("autograd anomaly detection enabled")
        for _ in range(args.steps_per_epoch):
            x = torch.randint(0, 3000, (16, 48), generator=g)
            y = x % 9
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, 9), y.reshape(-1))
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            step += 1
            if step % 10 == 0:
                log.info(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        log.info(f"epoch {epoch} done")
    acc.wait_for_everyone()
    log.info("training complete")


if __name__ == "__main__":
    main()
