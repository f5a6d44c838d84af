"""Review-helpfulness regressor (EmbeddingBag + MLP) with accelerate on two machines, one process each, DDP over
gloo; accelerate's get_logger with asctime."""
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from datetime import timedelta

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("helpfulness")


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logger.info(f"process {acc.process_index}/{acc.num_processes} (machine-local {acc.local_process_index})",
                main_process_only=False)
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    for step in range(1, 601):
        ids = torch.randint(0, 50000, (64, 48), generator=g)
        y = torch.rand(64, generator=g)
        loss = nn.functional.mse_loss(model(ids).squeeze(1), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            logger.info(f"step {step}/600 loss {loss.item():.4f}")
    acc.wait_for_everyone()
    logger.info("done")


if __name__ == "__main__":
    main()
