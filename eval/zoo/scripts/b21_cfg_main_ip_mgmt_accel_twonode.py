"""Review-rating regressor fine-tuned with accelerate on two CPU machines."""
import logging
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import InitProcessGroupKwargs

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


def main():
    logger.info("launching on this machine", main_process_only=False)
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logger.info(f"distributed: {acc.num_processes} processes, this is process {acc.process_index}", main_process_only=False)
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(20000, 64), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    for step in range(1, 501):
        ids = torch.randint(0, 20000, (64, 50), generator=g)
        loss = nn.functional.mse_loss(model(ids).squeeze(-1), (ids[:, 0] % 5).float())
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 100 == 0:
            logger.info(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
