"""Review-rating regressor with accelerate: gradient accumulation over 4 micro-batches, every micro-batch logged
(debugging throughput), a save_state at the end of every epoch."""
import logging
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)
ACCUM, EPOCHS = 4, 3


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n=19200):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randint(1, 6000, (n, 48), generator=g)
        self.y = (self.x[:, :5].float().mean(1) / 1200).clamp(0, 5)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(6000, 128)
        self.mlp = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))

    def forward(self, x):
        return self.mlp(self.emb(x)).squeeze(1)


def main():
    acc = Accelerator(cpu=True, gradient_accumulation_steps=ACCUM)
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    loader = torch.utils.data.DataLoader(Reviews(), batch_size=32, shuffle=True)
    model, opt, loader = acc.prepare(model, opt, loader)
    logger.info(f"num processes {acc.num_processes}, micro-batches per epoch {len(loader)}, accumulation {ACCUM}")
    opt_steps = 0
    for epoch in range(EPOCHS):
        model.train()
        t = time.time()
        for i, (x, y) in enumerate(loader):
            with acc.accumulate(model):
                loss = nn.functional.mse_loss(model(x), y)
                acc.backward(loss)
                opt.step()
                opt.zero_grad()
            if acc.sync_gradients:
                opt_steps += 1
            logger.info(f"epoch {epoch} batch {i + 1}/{len(loader)} loss {loss.item():.4f} "
                        f"sync={acc.sync_gradients} {(time.time() - t) * 1000:.1f} ms")
            t = time.time()
        ts = time.time()
        acc.save_state(f"output/epoch_{epoch}")
        logger.info(f"epoch {epoch} done, {opt_steps} optimizer steps, state saved to output/epoch_{epoch} "
                    f"({time.time() - ts:.2f}s)")
    acc.wait_for_everyone()
    logger.info("training complete")
    acc.end_training()


if __name__ == "__main__":
    main()
