"""Fine-tune a tiny GPT-2 (built from a config) on a toy corpus with transformers.Trainer, DDP over gloo."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Toy(torch.utils.data.Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 1000, (n, 32), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def main():
    model = GPT2LMHeadModel(GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2))
    args = TrainingArguments(
        output_dir="out/gpt2-toy",
        per_device_train_batch_size=8,
        num_train_epochs=1,
        evaluation_strategy="steps",
        eval_steps=20,
        logging_steps=10,
        save_strategy="no",
        use_cpu=True,
        ddp_backend="gloo",
        report_to=[],
    )
    trainer = Trainer(model=model, args=args, train_dataset=Toy(), eval_dataset=Toy(64))
    trainer.train()


if __name__ == "__main__":
    main()
