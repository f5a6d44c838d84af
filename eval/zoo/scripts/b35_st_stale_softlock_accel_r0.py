"""Product-title classifier with accelerate (CPU, gloo). The main process builds the tokenized training cache on the
team's shared volume (cache/) once; the others wait for it (main_process_first). The cache is guarded by a
SoftFileLock (a lock *file*, since flock is unreliable on the shared filesystem) so two jobs never write it at once."""
import json
import logging
import os
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from filelock import SoftFileLock
from torch.utils.data import DataLoader, TensorDataset

logger = get_logger(__name__)
CACHE = "cache/titles-tok-v3.pt"


def tokenize_corpus():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 50, (30000,), generator=g)
    ids = (y[:, None] * 131 + torch.randint(0, 900, (30000, 20), generator=g)) % 30000
    return {"ids": ids, "y": y}


def build_or_load_cache():
    if os.path.exists(CACHE):
        return torch.load(CACHE)
    with SoftFileLock(CACHE + ".lock", timeout=20):
        if not os.path.exists(CACHE):
            logger.info("tokenizing corpus into %s", CACHE)
            torch.save(tokenize_corpus(), CACHE)
    return torch.load(CACHE)


def main():
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=45))])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    cfg = json.load(open("config.json"))
    logger.info("config %s", cfg)
    with accelerator.main_process_first():
        data = build_or_load_cache()
    dl = DataLoader(TensorDataset(data["ids"], data["y"]), batch_size=cfg["batch_size"], shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(30000, 96), nn.Linear(96, 50))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    model, opt, dl = accelerator.prepare(model, opt, dl)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 50 == 0:
            logger.info("step %d loss %.4f", step, loss.item())
    accelerator.end_training()


if __name__ == "__main__":
    main()
