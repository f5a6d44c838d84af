"""Next-basket recommender (GRU over past baskets) trained with accelerate, 2 processes; the main process logs every
50 steps with python logging."""
import logging
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s,%(msecs)03d %(levelname)s %(name)s - %(message)s", datefmt="%Y-%m-%d %H:%M:%S",
                    level=logging.INFO)
log = get_logger("basket")
ITEMS, STEPS = 5000, 1200


class Rec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(ITEMS, 64)
        self.gru = nn.GRU(64, 96, batch_first=True)
        self.out = nn.Linear(96, ITEMS)

    def forward(self, baskets):  # (B, T, K)
        b, t, k = baskets.shape
        e = self.emb(baskets.reshape(b * t, k)).reshape(b, t, 64)
        return self.out(self.gru(e)[0][:, -1])


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = Rec()
    model, opt = acc.prepare(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    g = torch.Generator().manual_seed(acc.process_index)
    log.info("training for %d steps on %d processes", STEPS, acc.num_processes)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        baskets = torch.randint(0, ITEMS, (32, 6, 5), generator=g)
        target = torch.randint(0, ITEMS, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(baskets), target)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            dt = (time.time() - t0) / 50
            log.info("step %d/%d loss %.4f | %.1f ms/step | %.0f baskets/s", step, STEPS, loss.item(), dt * 1000,
                     32 * acc.num_processes / dt)
            t0 = time.time()
    acc.wait_for_everyone()
    log.info("training done")


if __name__ == "__main__":
    main()
