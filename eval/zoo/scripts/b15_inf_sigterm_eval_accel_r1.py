"""Image-patch classifier (small CNN on 32x32 tiles), accelerate with Accelerator(cpu=True) over gloo, 2 processes.
tqdm bars on the main process for training and validation; validation after every epoch, predictions gathered with
gather_for_metrics."""
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


def tiles(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = (x[:, 0, :8, :8].mean((1, 2)) > 0).long() + 2 * (x[:, 1, 8:16, 8:16].mean((1, 2)) > 0).long()
    return TensorDataset(x, y)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train = DataLoader(tiles(6400, 0), batch_size=64, shuffle=True)
    val = DataLoader(tiles(4096, 1), batch_size=128)
    model, opt, train, val = acc.prepare(model, opt, train, val)
    for epoch in range(3):
        model.train()
        bar = tqdm(train, desc=f"epoch {epoch}", disable=not acc.is_local_main_process)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        acc.print(f"epoch {epoch}: train loss {loss.item():.4f}, running validation")
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in tqdm(val, desc="validation", disable=not acc.is_local_main_process):
                pred, ref = acc.gather_for_metrics((model(x).argmax(1), y))
                correct += (pred == ref).sum().item()
                total += ref.numel()
        acc.print(f"epoch {epoch}: val acc {correct / total:.4f} ({total} tiles)")
    acc.end_training()


if __name__ == "__main__":
    main()
