"""Review-rating regressor (bag of embeddings + MLP) trained with accelerate on 3 CPU processes with gradient
accumulation (2 micro-batches per optimizer step):
accelerate's logger on the main process, the state of every process at start-up, a progress bar over optimizer
steps on the local main process, one line per epoch."""
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from tqdm.auto import tqdm

logger = get_logger(__name__)


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n=60000, seq=48, vocab=30000):
        g = torch.Generator().manual_seed(13)
        self.ids = torch.randint(1, vocab, (n, seq), generator=g)
        self.rating = (self.ids[:, :6].float().mean(1) / vocab * 4 + 1).clamp(1, 5)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.rating[i]


class Rater(nn.Module):
    def __init__(self, vocab=30000, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(d, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 1))

    def forward(self, x):
        return self.mlp(self.emb(x)).squeeze(-1)


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
    logger.info(accelerator.state, main_process_only=False)
    set_seed(13)
    torch.set_num_threads(1)
    ds = Reviews()
    loader = torch.utils.data.DataLoader(ds, batch_size=128, shuffle=True)
    model = Rater()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    num_epochs, steps_per_epoch = 2, 50
    logger.info("***** Running training *****")
    logger.info(f"  Num examples = {len(ds)}")
    logger.info(f"  Num Epochs = {num_epochs}")
    logger.info(f"  Gradient Accumulation steps = {accelerator.gradient_accumulation_steps}")
    logger.info(f"  Total optimization steps = {num_epochs * steps_per_epoch}")
    progress_bar = tqdm(range(num_epochs * steps_per_epoch), disable=not accelerator.is_local_main_process)
    completed = 0
    for epoch in range(num_epochs):
        model.train()
        done, total = 0, 0.0
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = F.mse_loss(model(x), y)
                accelerator.backward(loss)
                opt.step()
                opt.zero_grad()
            total += loss.detach().float()
            if accelerator.sync_gradients:
                progress_bar.update(1)
                completed += 1
                done += 1
                if done >= steps_per_epoch:
                    break
        mse = accelerator.gather(total.reshape(1)).mean().item() / (2 * steps_per_epoch)
        logger.info(f"epoch {epoch}: train_mse: {mse:.4f} step: {completed}")
    accelerator.wait_for_everyone()
    logger.info("training complete")


if __name__ == "__main__":
    main()
