"""Ticket-priority classifier with accelerate. Hyper-parameters come from configs/train.yaml; batch_size there is the
GLOBAL batch (split_batches=True), so results do not depend on how many processes the job gets."""
import time

import torch
import torch.nn as nn
import yaml
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration
from torch.utils.data import DataLoader, TensorDataset


def main():
    cfg = yaml.safe_load(open("configs/train.yaml"))
    acc = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(split_batches=True))
    acc.print(f"config: {cfg}")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(9000, 40, generator=g)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg["batch_size"], shuffle=True)
    model = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    model, opt, loader = acc.prepare(model, opt, loader)
    for epoch in range(cfg["epochs"]):
        t0 = time.time()
        for step, (xb, yb) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            if step % 20 == 0:
                acc.print(f"epoch {epoch} step {step} loss {loss.item():.4f} {(time.time() - t0) / step * 1000:.1f} ms/step")
    acc.wait_for_everyone()
    acc.save_model(model, "out/priority")


if __name__ == "__main__":
    main()
