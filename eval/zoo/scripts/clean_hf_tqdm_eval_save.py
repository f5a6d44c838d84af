# Tiny GPT-2 fine-tune with the HF Trainer: evaluation and a checkpoint every 100 steps, the final model saved.
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Lines(torch.utils.data.Dataset):
    def __init__(self, n, seed, seq=32, vocab=1000):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    cfg = GPT2Config(vocab_size=1000, n_positions=32, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir="out/gpt2-lines", per_device_train_batch_size=8, per_device_eval_batch_size=32,
                             max_steps=400, learning_rate=5e-4, logging_steps=20, eval_strategy="steps",
                             eval_steps=100, save_strategy="steps", save_steps=100, save_total_limit=2,
                             report_to="none", use_cpu=True, ddp_backend="gloo")
    trainer = Trainer(model=model, args=args, train_dataset=Lines(8000, 0), eval_dataset=Lines(512, 1))
    trainer.train()
    trainer.save_model("out/gpt2-lines/final")


if __name__ == "__main__":
    main()
