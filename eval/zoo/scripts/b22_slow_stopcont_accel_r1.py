"""Click-through-rate model (hashed sparse features -> EmbeddingBag + MLP) trained with accelerate, DDP over gloo on
CPU; every process logs its own step time every 20 steps."""
import logging
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("ctr")
STEPS = 500


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50000, 32, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, ids, offsets):
        return self.mlp(self.emb(ids, offsets)).squeeze(1)


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = CTR()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    window, t_last = [], time.perf_counter()
    for step in range(1, STEPS + 1):
        ids = torch.randint(0, 50000, (256 * 24,), generator=g)
        offsets = torch.arange(0, 256 * 24, 24)
        y = (torch.rand(256, generator=g) < 0.1).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(ids, offsets), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        now = time.perf_counter()
        window.append(now - t_last)
        t_last = now
        if step % 20 == 0:
            logger.info(f"[rank {acc.process_index}] step {step}/{STEPS} loss {loss.item():.4f} "
                        f"step_time {1000 * sum(window) / len(window):.1f} ms", main_process_only=False)
            window = []
    acc.wait_for_everyone()
    logger.info("training complete")


if __name__ == "__main__":
    main()
