"""Image-quality regressor (small CNN) with accelerate over two machines (CPU, gloo on the data network); accelerate's
get_logger with asctime, every process logging."""
import logging
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, TensorDataset

logger = get_logger(__name__)


def main():
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    g = torch.Generator().manual_seed(0)
    x = torch.rand(24000, 3, 32, 32, generator=g)
    y = x.mean(dim=(1, 2, 3)) + 0.05 * torch.randn(24000, generator=g)
    dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, dl = accelerator.prepare(model, opt, dl)
    total = len(dl)
    for step, (xb, yb) in enumerate(dl, 1):
        loss = F.mse_loss(model(xb).squeeze(1), yb)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 25 == 0:
            logger.info(f"step {step}/{total} loss {loss.item():.5f}", main_process_only=False)
    accelerator.wait_for_everyone()
    logger.info("done")


if __name__ == "__main__":
    main()
