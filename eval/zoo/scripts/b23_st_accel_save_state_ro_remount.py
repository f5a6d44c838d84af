"""Sentiment classifier (embedding + BiLSTM) with accelerate; accelerator.save_state() to the shared checkpoint
volume every 40 steps, tqdm bar on the main process, accelerate's logger."""
import logging
import os

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)
CKPT = "/mnt/ckpt23/sentiment-lstm"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30000, 128)
        self.lstm = nn.LSTM(128, 128, batch_first=True, bidirectional=True)
        self.head = nn.Linear(256, 3)

    def forward(self, x):
        return self.head(self.lstm(self.emb(x))[0].mean(1))


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    x, y = torch.randint(0, 30000, (6400, 24)), torch.randint(0, 3, (6400,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt, loader = acc.prepare(model, opt, loader)
    step = 0
    bar = tqdm(total=len(loader) * 2, disable=not acc.is_local_main_process)
    for epoch in range(2):
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}", epoch=epoch)
            if step % 40 == 0:
                out = os.path.join(CKPT, f"step_{step}")
                acc.save_state(out)
                logger.info(f"saved state to {out}")
    bar.close()
    logger.info("done")


if __name__ == "__main__":
    main()
