"""Product-title encoder for a retrieval index, trained with accelerate the way the no_trainer examples do it:
accelerate's logger (main process only), its progress bar on the local main process, the state of every process at
start-up, and one line per epoch."""
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from tqdm.auto import tqdm

logger = get_logger(__name__)


class Pairs(torch.utils.data.Dataset):
    """(query, title) token pairs from the click logs, padded to 32 tokens."""

    def __init__(self, n=20000, seq=32, vocab=20000):
        g = torch.Generator().manual_seed(7)
        self.q = torch.randint(1, vocab, (n, seq), generator=g)
        self.t = torch.cat([self.q[:, :8], torch.randint(1, vocab, (n, seq - 8), generator=g)], 1)

    def __len__(self):
        return len(self.q)

    def __getitem__(self, i):
        return self.q[i], self.t[i]


class Encoder(nn.Module):
    def __init__(self, vocab=20000, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(d, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, d))

    def forward(self, x):
        return F.normalize(self.mlp(self.emb(x)), dim=-1)


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    accelerator = Accelerator(cpu=True)
    logger.info(accelerator.state, main_process_only=False)
    set_seed(7)
    torch.set_num_threads(1)
    train_ds = Pairs()
    loader = torch.utils.data.DataLoader(train_ds, batch_size=128, shuffle=True)
    model = Encoder()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    num_epochs, max_train_steps = 2, 120
    steps_per_epoch = min(len(loader), max_train_steps // num_epochs)
    total_batch_size = 128 * accelerator.num_processes
    logger.info("***** Running training *****")
    logger.info(f"  Num examples = {len(train_ds)}")
    logger.info(f"  Num Epochs = {num_epochs}")
    logger.info(f"  Instantaneous batch size per device = 128")
    logger.info(f"  Total train batch size (w. parallel, distributed & accumulation) = {total_batch_size}")
    logger.info(f"  Total optimization steps = {max_train_steps}")
    progress_bar = tqdm(range(max_train_steps), disable=not accelerator.is_local_main_process)
    completed_steps = 0
    for epoch in range(num_epochs):
        model.train()
        total_loss = 0.0
        for step, (q, t) in enumerate(loader):
            if step >= steps_per_epoch:
                break
            zq, zt = model(q), model(t)
            logits = zq @ zt.T / 0.05
            loss = F.cross_entropy(logits, torch.arange(len(q)))
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            progress_bar.update(1)
            completed_steps += 1
            total_loss += loss.detach().float()
        avg = accelerator.gather(total_loss.reshape(1)).mean().item() / steps_per_epoch
        logger.info(f"epoch {epoch}: train_loss: {avg:.4f} perplexity: {math.exp(min(avg, 20)):.2f}")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        torch.save(accelerator.unwrap_model(model).state_dict(), "title_encoder.pt")
    logger.info("training done, encoder saved to title_encoder.pt")


if __name__ == "__main__":
    main()
