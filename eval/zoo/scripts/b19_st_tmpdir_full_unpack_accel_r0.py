"""Fine-tune a small text classifier with accelerate; the dataset ships as a tar.gz that the main process unpacks into
a scratch directory under $TMPDIR at start-up."""
import os
import tarfile
import tempfile

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


def main():
    acc = Accelerator(cpu=True)
    scratch = os.path.join(tempfile.gettempdir(), "newsgroups-unpacked")
    if acc.is_main_process:
        logger.info(f"unpacking data/newsgroups-v3.tar.gz to {scratch}")
        os.makedirs(scratch, exist_ok=True)
        with tarfile.open("data/newsgroups-v3.tar.gz") as tar:
            tar.extractall(scratch, filter="data")
        logger.info("unpacked %d files", len(os.listdir(scratch)))
    acc.wait_for_everyone()
    files = sorted(os.listdir(scratch))
    logger.info(f"{len(files)} shards", main_process_only=False)
    model = nn.Sequential(nn.EmbeddingBag(30000, 64), nn.Linear(64, 20))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for step in range(200):
        ids = torch.randint(0, 30000, (32, 64))
        loss = nn.functional.cross_entropy(model(ids), torch.randint(0, 20, (32,)))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 50 == 0:
            logger.info(f"step {step} loss {loss.item():.4f}")
    acc.end_training()


if __name__ == "__main__":
    main()
