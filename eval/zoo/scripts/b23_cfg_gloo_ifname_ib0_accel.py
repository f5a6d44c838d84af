"""Tabular churn model (MLP) with accelerate on one machine, gloo on CPU; accelerate's logger with asctime."""
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)


def main():
    acc = Accelerator(cpu=True)
    logger.info(f"process {acc.process_index}/{acc.num_processes} on {acc.device}", main_process_only=False)
    torch.manual_seed(0)
    x, y = torch.randn(20000, 32), torch.randint(0, 2, (20000,)).float()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=128, shuffle=True)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, loader = acc.prepare(model, opt, loader)
    for epoch in range(3):
        for i, (xb, yb) in enumerate(loader, 1):
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
        logger.info(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
