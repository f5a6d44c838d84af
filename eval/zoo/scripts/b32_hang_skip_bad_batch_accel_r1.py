"""Query-intent tagger (embedding + 1-D conv over pre-tokenized queries), trained with accelerate on 2 processes;
each process reads its own part of the tokenized query log (data/queries-<rank>.npy). A batch that fails is logged
and skipped so one bad record does not kill a long run."""
import datetime
import logging

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("intent")
VOCAB, LABELS = 16000, 30


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 96)
        self.conv = nn.Conv1d(96, 128, 3, padding=1)
        self.out = nn.Linear(128, LABELS)

    def forward(self, x):
        return self.out(F.relu(self.conv(self.emb(x).transpose(1, 2))).amax(2))


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    rank = acc.process_index
    data = np.load(f"data/queries-{rank}.npy")
    x, y = torch.from_numpy(data[:, :-1].astype(np.int64)), torch.from_numpy(data[:, -1].astype(np.int64))
    logger.info(f"process {rank}: {len(y)} queries", main_process_only=False)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    steps = len(y) // 32
    bar = tqdm(range(steps), disable=not acc.is_local_main_process, desc="epoch 0")
    for step in bar:
        xb, yb = x[step * 32:(step + 1) * 32], y[step * 32:(step + 1) * 32]
        try:
            loss = F.cross_entropy(model(xb), yb)
        except Exception as e:  # a bad record must not kill the run
            logger.warning(f"skipping batch {step}: {e}", main_process_only=False)
            continue
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    acc.wait_for_everyone()
    if acc.is_main_process:
        acc.save(acc.unwrap_model(model).state_dict(), "intent_tagger.pt")
        logger.info("saved intent_tagger.pt")


if __name__ == "__main__":
    main()
