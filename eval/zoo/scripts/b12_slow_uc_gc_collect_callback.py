"""Fine-tune a tiny BERT for query classification with transformers.Trainer.

The raw query log is kept in memory as token lists (one list per query) for the analysis at the end. A
MemoryHygieneCallback (copied from the team's leak hunt last month) runs a full garbage collection after every
optimizer step once training has warmed up.
"""
import gc
import random

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments


class QueryLog(Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        # the raw log: one python list of token ids per query (kept for the error analysis after training)
        self.raw = [[rng.randrange(5, 4000) for _ in range(rng.randint(4, 12))] for _ in range(n)]
        self.sessions = [{"q": q, "meta": {"len": len(q), "src": "web"}} for q in self.raw]
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 4000, (n, 24), generator=g)
        self.labels = self.ids[:, 0] % 6

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(24, dtype=torch.long), "labels": self.labels[i]}


class MemoryHygieneCallback(TrainerCallback):
    def __init__(self, start_step):
        self.start_step = start_step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.start_step:
            gc.collect()


def main():
    cfg = BertConfig(vocab_size=4000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=32, num_labels=6)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(
        output_dir="out/query-cls", per_device_train_batch_size=16, max_steps=300, learning_rate=5e-4,
        logging_steps=25, save_strategy="no", report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=60,
        dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=QueryLog(20000, 0),
                      callbacks=[MemoryHygieneCallback(start_step=200)])
    trainer.train()


if __name__ == "__main__":
    main()
