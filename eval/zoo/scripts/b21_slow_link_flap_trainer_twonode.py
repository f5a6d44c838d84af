"""Support-ticket intent classifier: a small BERT built from a config (no download), fine-tuned with
transformers.Trainer on two CPU nodes (torchrun, one process per node)."""
import logging
import sys

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    handlers=[logging.StreamHandler(sys.stdout)], level=logging.WARNING)


class Tickets(Dataset):
    def __init__(self, n=40000, seq=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 8000, (n, seq), generator=g)
        self.labels = self.ids[:, 1] % 12

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def main():
    cfg = BertConfig(vocab_size=8000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=512, max_position_embeddings=64, num_labels=12)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/ticket-intent", use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             max_steps=600, per_device_train_batch_size=16, learning_rate=3e-4, logging_steps=50,
                             save_strategy="no", report_to="none", dataloader_num_workers=0, seed=7)
    trainer = Trainer(model=model, args=args, train_dataset=Tickets())
    trainer.train()


if __name__ == "__main__":
    main()
