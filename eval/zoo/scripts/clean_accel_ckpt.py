# accelerate training loop with a checkpoint (save_state) every 100 steps and a final one.
import time

import torch
import torch.nn as nn
from accelerate import Accelerator


def main():
    acc = Accelerator(cpu=True, project_dir="runs/exp3")
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randn(12000, 256)
    y = (x[:, :8].argmax(1))
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    for epoch in range(1, 3):
        t0 = time.time()
        for b, (xb, yb) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            step += 1
            if b % 10 == 0:
                acc.print(f"Epoch {epoch} Batch {b}/{len(dl)} loss={loss.item():.4f} {10 / (time.time() - t0):.1f} it/s")
                t0 = time.time()
            if step % 100 == 0:
                acc.save_state(f"runs/exp3/checkpoints/step_{step}")
                acc.print(f"saved checkpoint runs/exp3/checkpoints/step_{step}")
    acc.save_state("runs/exp3/checkpoints/final")
    acc.print("training finished")


if __name__ == "__main__":
    main()
