import json
import logging

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

logger = logging.getLogger(__name__)
SEQ = 64


class TokenizedJsonl(Dataset):
    def __init__(self, paths):
        self.rows = []
        for p in paths:
            with open(p) as f:
                self.rows += [json.loads(line)["input_ids"] for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids = torch.tensor(self.rows[i][:SEQ])
        return {"input_ids": ids, "labels": ids.clone()}


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    ds = TokenizedJsonl([f"data/tokenized/part-{k}.jsonl" for k in range(4)])
    logger.info("%d sequences", len(ds))
    config = LlamaConfig(vocab_size=8000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=SEQ)
    model = LlamaForCausalLM(config)
    args = TrainingArguments(output_dir="out/llama-tiny", per_device_train_batch_size=8, num_train_epochs=1,
                             learning_rate=1e-3, logging_steps=10, save_strategy="no", report_to="none",
                             use_cpu=True, seed=7)
    Trainer(model=model, args=args, train_dataset=ds).train()


if __name__ == "__main__":
    main()
