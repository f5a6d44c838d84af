"""Sentiment model (embedding bag + MLP) trained with accelerate's notebook_launcher on 2 CPU processes: the
notebook's cells exported to a script and run on the team's CPU box. The training function builds its own
Accelerator, as the notebook_launcher docs ask."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, notebook_launcher


def training_loop(epochs=3):
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234)
    x = torch.randint(0, 5000, (6400, 48), generator=g)
    y = (x % 7 == 0).float().mean(1).gt(0.143).long()
    ds = torch.utils.data.TensorDataset(x, y)
    dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(5000, 128), nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(epochs):
        t0 = time.time()
        for step, (xb, yb) in enumerate(dl):
            loss = F.cross_entropy(model(xb), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            if step % 10 == 0:
                print(f"[process {acc.process_index}] epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f}")
            time.sleep(0.02)
        acc.print(f"epoch {epoch} done in {time.time() - t0:.1f}s")
    acc.wait_for_everyone()
    acc.print("training finished")


if __name__ == "__main__":
    import os
    notebook_launcher(training_loop, (3,), num_processes=2, use_port=os.environ.get("NB_PORT", "29500"))
