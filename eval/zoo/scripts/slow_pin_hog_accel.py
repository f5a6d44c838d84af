import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


def main():
    acc = Accelerator(cpu=True)
    x = torch.randn(64000, 128)
    y = (x @ torch.randn(128, 1)).squeeze(1)
    dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(1):
        bar = tqdm(dl, desc=f"[rank {acc.process_index}] epoch {epoch}", mininterval=1.0, ascii=True)
        for xb, yb in bar:
            loss = nn.functional.mse_loss(model(xb).squeeze(1), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            bar.set_postfix(loss=f"{loss.item():.3f}")


if __name__ == "__main__":
    main()
