"""FAQ-answer ranker: a small BERT sequence classifier (from a config, no download) fine-tuned with
transformers.Trainer on 2 CPU processes (gloo under torchrun), with an evaluation every 40 steps on the held-out
questions and a checkpoint every 40 steps (the last two kept)."""
import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n, seed, seq=48, vocab=6000):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(100, vocab, (n, seq), generator=g)
        self.label = (self.ids[:, 0] > self.ids[:, 24]).long()

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.label[i]}


def accuracy(p):
    return {"accuracy": float((np.argmax(p.predictions, -1) == p.label_ids).mean())}


def main():
    cfg = BertConfig(vocab_size=6000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=512, max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/faq-ranker", per_device_train_batch_size=16,
                             per_device_eval_batch_size=64, max_steps=120, learning_rate=2e-4, warmup_steps=10,
                             logging_steps=10, eval_strategy="steps", eval_steps=40, save_strategy="steps",
                             save_steps=40, save_total_limit=2, report_to=[], use_cpu=True, ddp_backend="gloo",
                             ddp_timeout=30, dataloader_num_workers=0, seed=11)
    trainer = Trainer(model=model, args=args, train_dataset=Pairs(12000, 1), eval_dataset=Pairs(768, 2),
                      compute_metrics=accuracy)
    trainer.train()


if __name__ == "__main__":
    main()
