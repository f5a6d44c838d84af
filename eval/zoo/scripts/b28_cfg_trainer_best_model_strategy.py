"""Sentiment fine-tune of a small BERT-like encoder with transformers.Trainer, 2 ranks under torchrun (gloo, CPU);
the run's settings come from configs/finetune.json."""
import json
import logging

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("finetune")


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 3000, (n, 48), generator=g)
        self.y = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(48, dtype=torch.long), "labels": self.y[i]}


def main():
    with open("configs/finetune.json") as f:
        cfg = json.load(f)
    log.info("config: %s", cfg)
    model = BertForSequenceClassification(BertConfig(vocab_size=3000, hidden_size=64, num_hidden_layers=2,
                                                     num_attention_heads=2, intermediate_size=128, num_labels=2))
    args = TrainingArguments(output_dir=cfg["output_dir"], per_device_train_batch_size=cfg["batch_size"],
                             learning_rate=cfg["lr"], num_train_epochs=cfg["epochs"], logging_steps=cfg["logging_steps"],
                             eval_strategy=cfg["eval_strategy"], eval_steps=cfg["eval_steps"],
                             save_strategy=cfg["save_strategy"], save_steps=cfg.get("save_steps", 500),
                             load_best_model_at_end=cfg["load_best_model_at_end"],
                             metric_for_best_model="eval_loss", use_cpu=True, ddp_backend="gloo", report_to=[])
    trainer = Trainer(model=model, args=args, train_dataset=Reviews(2000, 0), eval_dataset=Reviews(200, 1))
    trainer.train()
    trainer.save_model(cfg["output_dir"] + "/final")


if __name__ == "__main__":
    main()
