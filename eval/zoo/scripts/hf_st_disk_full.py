import logging

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


class PackedTokens(Dataset):
    def __init__(self, n, seq_len=64, vocab=2000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    config = GPT2Config(vocab_size=2000, n_positions=64, n_embd=128, n_layer=4, n_head=4)
    model = GPT2LMHeadModel(config)
    logger.info("model parameters: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
    args = TrainingArguments(
        output_dir="/mnt/ckpt/gpt2-small-run3",
        per_device_train_batch_size=8,
        max_steps=200,
        learning_rate=3e-4,
        logging_steps=10,
        save_strategy="steps",
        save_steps=40,
        report_to="none",
        use_cpu=True,
    )
    Trainer(model=model, args=args, train_dataset=PackedTokens(4096)).train()


if __name__ == "__main__":
    main()
