"""Product-title classifier, accelerate (CPU, gloo), 2 processes; resumes from the last save_state
checkpoint when --resume-from is given."""
import argparse
import logging
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, TensorDataset

logger = get_logger(__name__)


def build_model():
    return nn.Sequential(nn.EmbeddingBag(30000, 256), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume-from", default=None)
    ap.add_argument("--steps", type=int, default=600)
    args = ap.parse_args()
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    g = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randint(0, 30000, (20000, 20), generator=g), torch.randint(0, 64, (20000,), generator=g))
    dl = DataLoader(ds, batch_size=64, shuffle=True)
    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=args.steps)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    start = 0
    if args.resume_from:
        logger.info(f"resuming from {args.resume_from}")
        acc.load_state(args.resume_from)
        start = int(args.resume_from.rstrip("/").rsplit("_", 1)[1])
        logger.info(f"resumed at step {start}")
    step = start
    while step < args.steps:
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            sched.step()
            step += 1
            if step % 50 == 0:
                logger.info(f"step {step}/{args.steps} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
            if step % 200 == 0:
                acc.save_state(f"checkpoints/step_{step}")
            if step >= args.steps:
                break
    logger.info("done")


if __name__ == "__main__":
    main()
