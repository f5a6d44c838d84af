"""Tiny BERT-style encoder for query intent, fine-tuned with transformers.Trainer (built from a config, no
download), DDP over gloo, 2 ranks under torchrun. A timing callback logs the mean step time every 20 steps."""
import logging
import random
import time

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = logging.getLogger("intent")
VOCAB, SEQ = 8000, 48


class Queries(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = []
        for _ in range(n):
            label = rng.randrange(20)
            ids = [101] + [rng.randrange(1000 + label * 300, 1300 + label * 300) for _ in range(SEQ - 2)] + [102]
            self.rows.append((ids, label))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, label = self.rows[i]
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": torch.tensor(label)}


class StepTimer(TrainerCallback):
    def __init__(self, every=20):
        self.every, self.t0 = every, None

    def on_step_begin(self, args, state, control, **kw):
        if self.t0 is None:
            self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % self.every == 0:
            dt = (time.perf_counter() - self.t0) / self.every
            log.info(f"[rank {args.process_index}] step {state.global_step}/{state.max_steps} "
                     f"avg_step_time {dt * 1000:.1f} ms")
            self.t0 = time.perf_counter()


def main():
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=256, max_position_embeddings=64, num_labels=20)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/intent-bert", per_device_train_batch_size=32, max_steps=300,
                             learning_rate=3e-4, logging_steps=20, save_strategy="no", use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=30, report_to=[], dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Queries(12000, 0), callbacks=[StepTimer()])
    trainer.train()
    log.info("training done")


if __name__ == "__main__":
    main()
