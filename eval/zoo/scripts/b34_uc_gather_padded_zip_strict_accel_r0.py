"""Intent classifier for a support chatbot (EmbeddingBag + MLP over hashed tokens), trained with accelerate on
CPU. Every 100 steps the main process writes the validation predictions next to the utterance ids for the
error-analysis notebook."""
import csv
import logging
import os
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


def split(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 48, (n,), generator=g)
    x = (y[:, None] * 131 + torch.randint(0, 400, (n, 16), generator=g)) % 20000
    return x, y


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    xtr, ytr = split(40000, 0)
    xva, yva = split(1001, 1)
    val_ids = [f"utt-{i:05d}" for i in range(len(yva))]
    model = nn.Sequential(nn.EmbeddingBag(20000, 128), nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 48))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_dl = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True)
    val_dl = DataLoader(TensorDataset(xva, yva), batch_size=128)
    model, opt, train_dl, val_dl = acc.prepare(model, opt, train_dl, val_dl)
    logger.info("processes=%d train=%d val=%d", acc.num_processes, len(ytr), len(yva))
    step = 0
    for epoch in range(3):
        for x, y in train_dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            step += 1
            if step % 25 == 0:
                logger.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
            if step % 100 == 0:
                model.eval()
                preds, labels = [], []
                with torch.no_grad():
                    for xv, yv in val_dl:
                        p = model(xv).argmax(-1)
                        preds.append(acc.gather(p))
                        labels.append(acc.gather(yv))
                model.train()
                preds, labels = torch.cat(preds), torch.cat(labels)
                logger.info("step %d val_acc %.4f", step, (preds == labels).float().mean().item())
                if acc.is_main_process:
                    os.makedirs("analysis", exist_ok=True)
                    with open(f"analysis/val_preds_step{step}.csv", "w", newline="") as f:
                        w = csv.writer(f)
                        w.writerow(["id", "label", "pred"])
                        for row in zip(val_ids, labels.tolist(), preds.tolist(), strict=True):
                            w.writerow(row)
    acc.wait_for_everyone()
    logger.info("done")


if __name__ == "__main__":
    main()
