"""Image-quality regressor (small CNN) with accelerate; every 150 steps the main process writes the model with
accelerator.save_model, and everyone waits until the file is there before going on."""
import datetime
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = get_logger("iqa")


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    for step in range(1, 601):
        x = torch.rand(32, 3, 64, 64, generator=g)
        y = x.std(dim=(1, 2, 3)).unsqueeze(1)
        loss = nn.functional.mse_loss(model(x), y)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 25 == 0:
            log.info("step %d loss %.5f", step, loss.item(), main_process_only=False)
        if step % 150 == 0:
            if acc.is_main_process:
                acc.save_model(model, f"out/iqa-step{step}")
                log.info("saved out/iqa-step%d", step)
                acc.wait_for_everyone()
    log.info("training finished")


if __name__ == "__main__":
    main()
