"""Keyword-spotting model on log-mel features with accelerate; each process reads its own recordings file
(data/clips-<process>.npy) through a DataLoader with 2 workers that compute the log-mels and cache them per
clip for the following epochs."""
import numpy as np
import torch
import torch.nn as nn
from accelerate import Accelerator
from tqdm.auto import tqdm


class Clips(torch.utils.data.Dataset):
    def __init__(self, path):
        self.wave = np.load(path, mmap_mode="r")
        self.cache = {}

    def __len__(self):
        return len(self.wave)

    def __getitem__(self, i):
        if i not in self.cache:
            w = torch.from_numpy(np.array(self.wave[i], dtype=np.float32))
            spec = torch.stft(w, 400, 160, window=torch.hann_window(400), return_complex=True).abs() ** 2
            self.cache[i] = torch.log1p(spec[:201])
        feats = self.cache[i]
        return feats[:, :98], i % 12


def main():
    acc = Accelerator(cpu=True)
    ds = Clips(f"data/clips-{acc.process_index}.npy")
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=2,
                                         persistent_workers=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(201, 128, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                          nn.Linear(128, 12))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    acc.print(f"{len(ds)} clips per process, {acc.num_processes} processes")
    for epoch in range(3):
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=not acc.is_main_process)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        acc.print(f"epoch {epoch} done")


if __name__ == "__main__":
    main()
