"""Product-title categoriser (bag of embeddings + MLP) fine-tuned with accelerate on the CPU nodes."""
import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, TensorDataset

logger = get_logger(__name__)


def main():
    acc = Accelerator(cpu=True)
    logger.info(f"{acc.state}", main_process_only=False)
    n = 20000
    ds = TensorDataset(torch.randint(0, 20000, (n, 24)), torch.randint(0, 300, (n,)))
    dl = DataLoader(ds, batch_size=128, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(20000, 128), nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 300))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(2):
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            if step % 20 == 0:
                acc.print(f"epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f}")
    acc.save_model(model, "out/categoriser")


if __name__ == "__main__":
    main()
