"""Small causal LM (GPT-2 config, built from scratch) fine-tuned on synthetic code tokens with
transformers.Trainer, DDP over gloo on CPU, 2 ranks; evaluation with perplexity and token accuracy."""
import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed, seq=64, vocab=16000):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def compute_metrics(pred):
    logits, labels = pred
    acc = (logits[:, :-1].argmax(-1) == labels[:, 1:]).mean()
    return {"token_acc": float(acc)}


def main():
    cfg = GPT2Config(vocab_size=16000, n_positions=64, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(
        output_dir="out/codelm-tiny",
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        max_steps=40,
        eval_strategy="steps",
        eval_steps=40,
        logging_steps=10,
        save_strategy="no",
        learning_rate=5e-4,
        use_cpu=True,
        ddp_backend="gloo",
        ddp_timeout=20,
        report_to=[],
        dataloader_num_workers=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(4000, 0), eval_dataset=Tokens(1024, 1),
                      compute_metrics=compute_metrics)
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
