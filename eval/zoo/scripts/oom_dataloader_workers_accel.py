import numpy as np
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class ClipDataset(Dataset):
    """Decoded audio clips, decoded lazily and memoised per worker to skip re-decoding."""

    def __init__(self, n=4096):
        self.n = n
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            rng = np.random.default_rng(i)
            self.cache[i] = rng.standard_normal(16000 * 4).astype(np.float32)  # 4 s at 16 kHz
        clip = self.cache[i]
        return torch.from_numpy(clip[:16000].copy()), int(i % 8)


def main():
    acc = Accelerator(cpu=True)
    model = torch.nn.Sequential(torch.nn.Linear(16000, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dl = DataLoader(ClipDataset(), batch_size=32, shuffle=True, num_workers=6, persistent_workers=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(3):
        for step, (x, y) in enumerate(dl):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            if step % 10 == 0:
                acc.print(f"epoch {epoch} step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
