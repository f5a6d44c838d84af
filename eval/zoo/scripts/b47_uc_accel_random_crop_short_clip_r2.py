"""Keyword spotting (small CNN over 40-bin log-mel frames) trained with accelerate on 3 processes. Clips are stored as
variable-length frame tensors; the Dataset takes a random 64-frame window of each clip (the model's input size)."""
import torch
import torch.nn as nn
from accelerate import Accelerator

WINDOW = 64


class Clips(torch.utils.data.Dataset):
    def __init__(self, path):
        d = torch.load(path)
        self.clips, self.labels = d["clips"], d["labels"]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.clips[i]
        start = torch.randint(0, x.size(0) - WINDOW + 1, (1,)).item()  # random crop to the model's window
        return x[start:start + WINDOW], self.labels[i]


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    ds = Clips("data/kws_train.pt")
    dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False)
    model = nn.Sequential(nn.Conv1d(40, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(96, 12))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"{len(ds)} clips, {len(dl)} steps per epoch on each of {acc.num_processes} processes")
    for epoch in range(3):
        model.train()
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x.transpose(1, 2)), y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            if step % 5 == 0:
                acc.print(f"epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f}")
    acc.print("done")


if __name__ == "__main__":
    main()
