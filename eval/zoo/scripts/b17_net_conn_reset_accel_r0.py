"""Query-document relevance model (two-tower), accelerate (CPU, gloo), 2 processes; accelerate's logger with
asctime on every process every 50 steps."""
import logging
import time
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logger = get_logger(__name__)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.EmbeddingBag(16000, 96), nn.Linear(96, 96))
        self.d = nn.Sequential(nn.EmbeddingBag(16000, 96), nn.Linear(96, 96))

    def forward(self, q, d):
        return self.q(q) @ self.d(d).T


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    model = TwoTower()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt = acc.prepare(model, opt)
    total, t0 = 1200, time.time()
    for step in range(1, total + 1):
        q, d = torch.randint(0, 16000, (64, 12)), torch.randint(0, 16000, (64, 80))
        loss = nn.functional.cross_entropy(model(q, d), torch.arange(64))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            logger.info(f"step {step}/{total} loss {loss.item():.4f} {(time.time() - t0) / 50 * 1000:.1f} ms/step",
                        main_process_only=False)
            t0 = time.time()
    acc.wait_for_everyone()
    logger.info("done", main_process_only=False)


if __name__ == "__main__":
    main()
