"""Fine-tune a tiny BERT intent classifier with transformers.Trainer; evaluate and checkpoint every 100 steps and keep
the best checkpoint by accuracy."""
import numpy as np
import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Intents(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 3000, (n, 32), generator=g)
        self.labels = self.ids[:, :3].sum(1) % 4

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(32, dtype=torch.long), "labels": self.labels[i]}


def compute_metrics(pred):
    preds = np.argmax(pred.predictions, axis=-1)
    return {"acc": float((preds == pred.label_ids).mean())}


def main():
    cfg = BertConfig(vocab_size=3000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, num_labels=4)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(
        output_dir="runs/intent-bert", per_device_train_batch_size=16, per_device_eval_batch_size=64,
        num_train_epochs=2, learning_rate=5e-4, logging_steps=25, eval_strategy="steps", eval_steps=100,
        save_strategy="steps", save_steps=100, save_total_limit=2, metric_for_best_model="accuracy",
        greater_is_better=True, report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=20,
        dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=Intents(6400, 0), eval_dataset=Intents(512, 1),
                      compute_metrics=compute_metrics)
    trainer.train()
    trainer.save_model("runs/intent-bert/best")


if __name__ == "__main__":
    main()
