"""Support-ticket routing: a small BERT (built from a config) fine-tuned with transformers.Trainer on the weekly
ticket export, DDP over gloo; labels are the queue names of labels.txt."""
import logging

import pandas as pd
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("route_tickets")
SEQ = 48


class Tickets(torch.utils.data.Dataset):
    def __init__(self, path, queues):
        df = pd.read_csv(path)
        self.ids = [[int(t) for t in s.split()][:SEQ] for s in df["token_ids"]]
        self.labels = pd.Categorical(df["queue"], categories=queues).codes.astype("int64")
        log.info("%s: %d tickets", path, len(df))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        ids = self.ids[i] + [0] * (SEQ - len(self.ids[i]))
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor([int(t != 0) for t in ids]),
                "labels": torch.tensor(self.labels[i])}


def main():
    queues = open("data/labels.txt").read().split()
    cfg = BertConfig(vocab_size=8000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=SEQ, num_labels=len(queues))
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/ticket-router", per_device_train_batch_size=32, num_train_epochs=1,
                             learning_rate=3e-4, logging_steps=25, save_strategy="no", use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=20, report_to=[])
    trainer = Trainer(model=model, args=args, train_dataset=Tickets("data/tickets-2026w48.csv", queues))
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
