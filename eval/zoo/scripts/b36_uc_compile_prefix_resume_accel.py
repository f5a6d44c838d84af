"""News-topic classifier (embedding bag + MLP) with accelerate on CPU; resumes from the last checkpoint of the
previous run when --resume is given. get_logger asctime lines."""
import argparse
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


class TopicClassifier(nn.Module):
    def __init__(self, vocab=30000, d=128, n_cls=20):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(d, 256), nn.GELU(), nn.Dropout(0.1), nn.Linear(256, n_cls))

    def forward(self, x):
        return self.mlp(self.emb(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = TopicClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    start = 0
    if args.resume:
        logger.info(f"resuming from {args.resume}", main_process_only=False)
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
    if args.compile:
        model = torch.compile(model)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x = torch.randint(0, 30000, (64, 48), generator=g)
        y = torch.randint(0, 20, (64,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 100 == 0:
            logger.info(f"step {step}/{args.steps} loss {loss.item():.4f} ({(time.time() - t0) / 100 * 1000:.1f} ms/step)")
            t0 = time.time()
    if acc.is_main_process:
        torch.save({"model": acc.unwrap_model(model).state_dict(), "optimizer": opt.state_dict(), "step": args.steps},
                   "ckpt/last.pt")


if __name__ == "__main__":
    main()
