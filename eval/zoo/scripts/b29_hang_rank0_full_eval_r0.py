"""Image-patch classifier (small ViT-style encoder), DDP over gloo, 2 ranks under torchrun. Every 250 steps the main
process runs the full validation set (the other ranks go on training) and logs top-1."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = logging.getLogger("train_vit")
STEPS, EVAL_EVERY = 600, 200


class Encoder(nn.Module):
    def __init__(self, dim=64, depth=2, classes=100):
        super().__init__()
        self.patch = nn.Linear(48, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, dim * 2, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.blocks(self.patch(x)).mean(1))


@torch.no_grad()
def evaluate(model, n_batches=800):
    model.eval()
    g = torch.Generator().manual_seed(1234)
    correct = total = 0
    for _ in tqdm(range(n_batches), desc="eval", mininterval=1.0):
        x = torch.randn(256, 64, 48, generator=g)
        y = torch.randint(0, 100, (256,), generator=g)
        correct += (model(x).argmax(1) == y).sum().item()
        total += len(y)
    model.train()
    return correct / total


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(32, 16, 48, generator=g)
        y = torch.randint(0, 100, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            logger.info(f"step {step}/{STEPS} loss {loss.item():.4f} ({(time.time() - t0) / 50 * 1000:.0f} ms/step)")
            t0 = time.time()
        if step % EVAL_EVERY == 0 and rank == 0:
            logger.info(f"step {step}: running validation")
            acc = evaluate(model.module)
            logger.info(f"step {step}: val top-1 {acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
