"""Image denoising autoencoder trained with accelerate on two machines (one CPU process each); every 25 steps each
machine's process logs its step time and throughput."""
import logging
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 1, 3, padding=1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    t0 = time.time()
    for step in range(1, 301):
        clean = torch.rand(16, 1, 48, 48, generator=g)
        noisy = clean + 0.2 * torch.randn(clean.shape, generator=g)
        loss = F.mse_loss(model(noisy), clean)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 25 == 0:
            dt = (time.time() - t0) / 25
            logger.info("step %d/300 loss %.5f %.1f ms/step %.0f img/s", step, loss.item(), dt * 1000, 16 / dt,
                        main_process_only=False)
            t0 = time.time()
    acc.wait_for_everyone()
    logger.info("training complete", main_process_only=False)


if __name__ == "__main__":
    main()
