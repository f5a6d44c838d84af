"""Text classifier (bag of embeddings) trained with accelerate; hyper-parameters come from config.yaml."""
import argparse

import torch
import torch.nn as nn
import yaml
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


class BagClassifier(nn.Module):
    def __init__(self, vocab, hidden, classes):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, hidden, mode="mean")
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.head(self.emb(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="config.yaml")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)

    acc = Accelerator(cpu=True)
    acc.print(f"config: {cfg}")
    torch.manual_seed(cfg["seed"])
    x = torch.randint(0, cfg["model"]["vocab"], (4096, 24))
    y = (x[:, 0] % cfg["model"]["classes"])
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg["train"]["batch_size"], shuffle=True)
    model = BagClassifier(cfg["model"]["vocab"], cfg["model"]["hidden"], cfg["model"]["classes"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["optim"]["lr"], weight_decay=cfg["optim"]["weight_decay"])
    model, opt, loader = acc.prepare(model, opt, loader)
    step = 0
    for epoch in range(cfg["train"]["epochs"]):
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            step += 1
            if step % 20 == 0:
                acc.print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
    acc.print(f"done after {step} steps")


if __name__ == "__main__":
    main()
