import json
import logging

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


class Vocab:
    def __init__(self, texts):
        words = sorted({w for t in texts for w in t.lower().split()})
        self.ids = {w: i + 2 for i, w in enumerate(words)}  # 0 pad, 1 cls

    def encode(self, text, max_len=48):
        return [1] + [self.ids.get(w, 0) for w in text.lower().split()][: max_len - 1]


class Reviews(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]
        self.vocab = Vocab([r["text"] for r in self.rows])

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids = self.vocab.encode(self.rows[i]["text"])
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": self.rows[i]["label"]}


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    train = Reviews("data/reviews_train.jsonl")
    logger.info("loaded %d reviews, vocab %d", len(train), len(train.vocab.ids))
    config = BertConfig(vocab_size=len(train.vocab.ids) + 2, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128, max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(output_dir="out/sentiment", per_device_train_batch_size=16, num_train_epochs=2,
                             learning_rate=1e-3, logging_steps=5, save_strategy="no", report_to="none", use_cpu=True)
    Trainer(model=model, args=args, train_dataset=train).train()


if __name__ == "__main__":
    main()
