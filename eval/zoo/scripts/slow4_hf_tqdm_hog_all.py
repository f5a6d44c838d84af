# Fine-tune a tiny GPT-2 on synthetic "support ticket" text with the HF Trainer (DDP over gloo, CPU).
import random

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tickets(torch.utils.data.Dataset):
    def __init__(self, n=20000, seq=64, vocab=2000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        x = self.ids[i]
        return {"input_ids": x, "labels": x.clone()}


def main():
    random.seed(0)
    torch.set_num_threads(1)
    cfg = GPT2Config(vocab_size=2000, n_positions=64, n_embd=128, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(
        output_dir="out/gpt2-tickets",
        per_device_train_batch_size=16,
        max_steps=500,
        learning_rate=3e-4,
        warmup_steps=20,
        logging_steps=25,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        dataloader_num_workers=0,
        ddp_backend="gloo",
    )
    trainer = Trainer(model=model, args=args, train_dataset=Tickets())
    trainer.train()


if __name__ == "__main__":
    main()
