"""Support-ticket intent classifier (EmbeddingBag + MLP over token ids) trained with transformers.Trainer on 3 CPU
processes, evaluating on the dev set every 100 steps. Train and dev sets are pre-tokenized .pt exports."""
import torch
import torch.nn as nn
from transformers import Trainer, TrainerCallback, TrainingArguments

VOCAB = 8000  # tokenizer v1 (tok-v1/vocab.txt)


class BagClassifier(nn.Module):
    def __init__(self, vocab=VOCAB, dim=128, n_labels=20):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, n_labels))

    def forward(self, input_ids, labels=None):
        logits = self.head(self.emb(input_ids))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


class Rows(torch.utils.data.Dataset):
    def __init__(self, path):
        d = torch.load(path)
        self.x, self.y = d["input_ids"], d["labels"]

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.y[i]}


class Progress(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if state.is_world_process_zero and logs and "loss" in logs:
            print(f"step {state.global_step}/{state.max_steps} loss {logs['loss']:.4f}", flush=True)


def main():
    torch.manual_seed(0)
    args = TrainingArguments(output_dir="out/intent", per_device_train_batch_size=32, per_device_eval_batch_size=64,
                             max_steps=400, learning_rate=3e-3, eval_strategy="steps", eval_steps=100,
                             logging_steps=20, save_strategy="no", report_to=[], use_cpu=True, ddp_backend="gloo",
                             ddp_timeout=30, dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=BagClassifier(), args=args, train_dataset=Rows("data/tickets_train.pt"),
                      eval_dataset=Rows("data/tickets_dev.pt"), callbacks=[Progress()])
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
