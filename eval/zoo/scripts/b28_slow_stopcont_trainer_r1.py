"""Ticket-routing classifier: a small BERT-like encoder trained from scratch with transformers.Trainer, 2 ranks
under torchrun (gloo, CPU); a callback logs every rank's step time."""
import logging
import os
import time

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("routing")


class Tickets(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 4000, (n, 32), generator=g)
        self.y = torch.randint(0, 12, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(32, dtype=torch.long), "labels": self.y[i]}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.rank = int(os.environ.get("RANK", 0))
        self.t0 = time.time()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % 25 == 0:
            log.info("rank %d step %d/%d %.1f ms/step", self.rank, state.global_step, state.max_steps,
                     (time.time() - self.t0) / 25 * 1000)
            self.t0 = time.time()


def main():
    model = BertForSequenceClassification(BertConfig(vocab_size=4000, hidden_size=64, num_hidden_layers=2,
                                                     num_attention_heads=2, intermediate_size=128, num_labels=12))
    args = TrainingArguments(output_dir="out/routing", per_device_train_batch_size=16, learning_rate=3e-4,
                             max_steps=500, logging_steps=50, save_strategy="no", use_cpu=True, ddp_backend="gloo",
                             report_to=[], disable_tqdm=True, dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Tickets(20000, 0), callbacks=[StepTimer()])
    trainer.train()
    log.info("rank %d training finished", int(os.environ.get("RANK", 0)))


if __name__ == "__main__":
    main()
