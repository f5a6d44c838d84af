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
    model = GPT2LMHeadModel(GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2))
    args = TrainingArguments(output_dir="out/pretrain", per_device_train_batch_size=8, max_steps=3000,
                             learning_rate=5e-4, logging_steps=25, save_steps=500, report_to="none", use_cpu=True,
                             disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=PackedTokens(8192)).train()


if __name__ == "__main__":
    main()
