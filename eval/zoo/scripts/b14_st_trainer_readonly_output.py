"""Intent classifier fine-tuned with transformers.Trainer (a tiny BERT built from a config, no download),
DDP over gloo, 2 ranks under torchrun. Checkpoints go to the team volume mounted at ./outputs."""
import logging
import random

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = logging.getLogger(__name__)


class Intents(torch.utils.data.Dataset):
    def __init__(self, n=4000, seed=0):
        rng = random.Random(seed)
        self.rows = []
        for _ in range(n):
            label = rng.randrange(6)
            ids = [101] + [rng.randrange(1000, 3000) + 300 * label for _ in range(14)] + [102]
            self.rows.append((ids, label))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, label = self.rows[i]
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(len(ids), dtype=torch.long),
                "labels": torch.tensor(label)}


def main():
    cfg = BertConfig(vocab_size=5000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, num_labels=6)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="outputs/intent-bert-v2", per_device_train_batch_size=32, max_steps=300,
                             learning_rate=5e-4, logging_steps=20, save_steps=100, save_total_limit=2, use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=30, report_to=[], disable_tqdm=True,
                             dataloader_num_workers=1)
    log.info("output_dir=%s save_steps=%d", args.output_dir, args.save_steps)
    trainer = Trainer(model=model, args=args, train_dataset=Intents())
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
