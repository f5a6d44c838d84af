"""Fine-tune a tiny BERT classifier with transformers.Trainer; the main process pushes step metrics to the cluster's
Prometheus Pushgateway so the team dashboard shows live loss curves."""
import os
import time
import urllib.request

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

PUSHGATEWAY = os.environ.get("PUSHGATEWAY_URL", "http://127.0.0.1:9091")


class RandomText(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 3000, (n, 48), generator=g)
        self.labels = (self.ids[:, :4].sum(1) % 3)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(48, dtype=torch.long), "labels": self.labels[i]}


class PushMetrics(TrainerCallback):
    """Push the latest loss / step to the Pushgateway (text exposition format) after every optimizer step."""

    def __init__(self):
        self.last_loss = float("nan")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.last_loss = logs["loss"]

    def on_step_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        body = (f"train_step {state.global_step}\ntrain_loss {self.last_loss}\n"
                f"train_epoch {state.epoch or 0}\n").encode()
        req = urllib.request.Request(f"{PUSHGATEWAY}/metrics/job/bert-intent/instance/rank0", data=body,
                                     method="PUT")
        try:
            urllib.request.urlopen(req, timeout=5).read()
        except OSError as e:
            print(f"pushgateway: {e}")


def main():
    cfg = BertConfig(vocab_size=3000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, num_labels=3)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, max_steps=600, learning_rate=5e-4,
                             logging_steps=50, save_strategy="no", report_to=[], use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=20, dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=RandomText(12000, 0), callbacks=[PushMetrics()])
    trainer.train()


if __name__ == "__main__":
    main()
