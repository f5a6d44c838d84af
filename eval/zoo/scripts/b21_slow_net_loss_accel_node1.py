"""Product-title tagger (char CNN) fine-tuned with accelerate on two CPU machines, one process each."""
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from datetime import timedelta
from tqdm.auto import tqdm

EPOCHS, STEPS_PER_EPOCH = 2, 260


class CharCNN(nn.Module):
    def __init__(self, n_chars=256, dim=64, n_tags=128):
        super().__init__()
        self.emb = nn.Embedding(n_chars, dim)
        self.conv = nn.Sequential(nn.Conv1d(dim, 256, 5, padding=2), nn.ReLU(), nn.Conv1d(256, 256, 5, padding=2), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, n_tags))

    def forward(self, x):
        h = self.conv(self.emb(x).transpose(1, 2)).amax(-1)
        return self.head(h)


def batches(seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(STEPS_PER_EPOCH):
        x = torch.randint(0, 256, (32, 48), generator=g)
        yield x, (x[:, :3].sum(1) % 128)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
    acc.print(f"{acc.num_processes} processes, machine {acc.process_index}")
    torch.manual_seed(0)
    model = CharCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for epoch in range(EPOCHS):
        bar = tqdm(batches(epoch * 10 + acc.process_index), total=STEPS_PER_EPOCH, desc=f"epoch {epoch}",
                   disable=not acc.is_main_process, mininterval=0.5)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    acc.print("finished")
    acc.wait_for_everyone()


if __name__ == "__main__":
    main()
