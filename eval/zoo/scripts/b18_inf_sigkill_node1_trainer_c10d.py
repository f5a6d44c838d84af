"""Toxicity classifier fine-tuned with transformers.Trainer (a small BERT built from a config), DDP over gloo,
one process per node, two nodes."""
import logging
import random

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = logging.getLogger(__name__)
VOCAB, SEQ = 8000, 48


class Comments(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [([rng.randrange(5, VOCAB) for _ in range(SEQ)], rng.random() < 0.2) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, toxic = self.rows[i]
        if toxic:
            ids = [3] + ids[1:]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(int(toxic))}


def main():
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=SEQ, num_labels=2)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="runs/toxic-bert", per_device_train_batch_size=32, num_train_epochs=3,
                             learning_rate=3e-4, logging_steps=20, save_strategy="steps", save_steps=100,
                             use_cpu=True, ddp_backend="gloo", ddp_timeout=20, report_to=[],
                             disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Comments(16000, 0))
    trainer.train()
    trainer.save_model("runs/toxic-bert/final")
    log.info("training done")


if __name__ == "__main__":
    main()
