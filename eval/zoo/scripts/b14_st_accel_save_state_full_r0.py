"""Speaker-verification embedding model, accelerate (CPU, gloo), 2 processes, tqdm bar on the main process;
`accelerator.save_state` every 60 steps into ckpt/ (the run's checkpoint volume)."""
import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


def main():
    acc = Accelerator(cpu=True)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(12000, 40 * 8, generator=g)
    y = torch.randint(0, 200, (12000,), generator=g)
    dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=1)
    model = nn.Sequential(nn.Linear(320, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 200))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    for epoch in range(2):
        bar = tqdm(dl, disable=not acc.is_local_main_process, desc=f"epoch {epoch}")
        for xb, yb in bar:
            loss = nn.functional.cross_entropy(model(xb), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            step += 1
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % 60 == 0:
                acc.save_state(f"ckpt/step_{step:05d}")
                acc.print(f"saved state at step {step}")
    acc.print("done")


if __name__ == "__main__":
    main()
