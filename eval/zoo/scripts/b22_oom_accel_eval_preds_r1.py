"""Product-category classifier (20k categories) with accelerate, DDP over gloo on CPU. After each epoch the
validation pass keeps every batch's softmax for a calibration report (ECE, reliability bins) and gathers the
argmax for accuracy."""
import logging
import math

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("catclf")
N_CAT = 20000


def ece(probs, labels, bins=15):
    conf, pred = probs.max(1)
    edges = torch.linspace(0, 1, bins + 1)
    err = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            err += m.float().mean() * (conf[m].mean() - (pred[m] == labels[m]).float().mean()).abs()
    return float(err)


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(acc.process_index)
    train = TensorDataset(torch.randn(4096, 128, generator=g), torch.randint(0, N_CAT, (4096,), generator=g))
    val = TensorDataset(torch.randn(8192, 128, generator=g), torch.randint(0, N_CAT, (8192,), generator=g))
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, N_CAT))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tl, vl = DataLoader(train, batch_size=64, shuffle=True), DataLoader(val, batch_size=64)
    model, opt, tl, vl = acc.prepare(model, opt, tl, vl)
    logger.info(f"processes: {acc.num_processes}, train batches/process: {len(tl)}, val batches/process: {len(vl)}")
    for epoch in range(3):
        model.train()
        for step, (x, y) in enumerate(tl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            if step % 16 == 0:
                logger.info(f"epoch {epoch} step {step}/{len(tl)} loss {loss.item():.4f}")
        model.eval()
        all_probs, all_labels, correct, seen = [], [], 0, 0
        with torch.no_grad():
            for i, (x, y) in enumerate(vl):
                probs = model(x).softmax(-1)
                all_probs.append(probs)
                all_labels.append(y)
                p, t = acc.gather_for_metrics((probs.argmax(-1), y))
                correct += (p == t).sum().item()
                seen += t.numel()
                if i % 20 == 0:
                    logger.info(f"eval epoch {epoch} batch {i}/{len(vl)}")
        e = ece(torch.cat(all_probs), torch.cat(all_labels))
        logger.info(f"epoch {epoch} val_acc {correct / seen:.4f} ece {e:.4f} ppl {math.exp(loss.item()):.1f}")
    acc.wait_for_everyone()
    logger.info("done")


if __name__ == "__main__":
    main()
