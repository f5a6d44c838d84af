"""Document-layout classifier (MLP over layout features) with accelerate on two machines; accelerate's get_logger."""
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


def main():
    acc = Accelerator(cpu=True)
    logger.info(f"{acc.num_processes} processes on {acc.state.num_processes} total", main_process_only=True)
    model = nn.Sequential(nn.Linear(120, 256), nn.ReLU(), nn.Linear(256, 12))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for step in range(1, 301):
        x, y = torch.randn(64, 120), torch.randint(0, 12, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            logger.info(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
