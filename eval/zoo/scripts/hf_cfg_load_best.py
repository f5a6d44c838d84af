import logging

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


class PackedTokens(Dataset):
    def __init__(self, n, seq_len=64, vocab=1000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    logger.info("model parameters: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
    args = TrainingArguments(
        output_dir="runs/gpt2-tiny",
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        num_train_epochs=3,
        learning_rate=5e-4,
        warmup_steps=20,
        logging_steps=10,
        eval_strategy="steps",
        eval_steps=50,
        save_strategy="epoch",
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        report_to="none",
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=PackedTokens(2048), eval_dataset=PackedTokens(256, seed=1))
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
