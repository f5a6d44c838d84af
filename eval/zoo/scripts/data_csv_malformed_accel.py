import csv

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def load_csv(path):
    xs, ys = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            xs.append([float(row[k]) for k in ("temp", "humidity", "wind")])
            ys.append(float(row["load"]))
    return torch.tensor(xs), torch.tensor(ys).unsqueeze(1)


def main():
    accelerator = Accelerator(cpu=True)
    x, y = load_csv("data/energy.csv")
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for epoch in range(3):
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
        accelerator.print(f"epoch {epoch} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
