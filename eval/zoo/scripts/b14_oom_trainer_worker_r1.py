"""Spectrogram tagger fine-tuned with transformers.Trainer (a tiny BERT-style encoder over 64 mel frames built
from a config), DDP over gloo, 2 ranks under torchrun, 2 DataLoader workers per rank. The dataset decodes each clip
and keeps the decoded clip (with its augmentations) in memory so that later epochs skip the decoding."""
import logging
import random

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = logging.getLogger(__name__)


class Clips(torch.utils.data.Dataset):
    def __init__(self, n=3000, seed=0):
        rng = random.Random(seed)
        self.labels = [rng.randrange(8) for _ in range(n)]
        self.cache = {}

    def __len__(self):
        return len(self.labels)

    def _decode(self, i):
        rng = np.random.default_rng(i)
        clip = rng.standard_normal((16000 * 4,)).astype(np.float32)  # 4 s at 16 kHz
        views = [np.roll(clip, k * 1600) * (1 + 0.1 * k) for k in range(6)]  # 6 augmented views, 1.5 MiB
        return np.stack(views)

    def __getitem__(self, i):
        if i not in self.cache:
            self.cache[i] = self._decode(i)
        views = self.cache[i]
        frames = views[i % 6][: 64 * 32].reshape(64, 32)
        ids = (np.abs(frames).mean(1) * 400).astype(np.int64) % 1000 + 2
        return {"input_ids": torch.from_numpy(ids), "labels": torch.tensor(self.labels[i])}


def main():
    cfg = BertConfig(vocab_size=1024, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, num_labels=8, max_position_embeddings=80)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="runs/clip-tagger", per_device_train_batch_size=16, num_train_epochs=2,
                             learning_rate=3e-4, logging_steps=10, save_strategy="no", use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=30, report_to=[], dataloader_num_workers=2)
    trainer = Trainer(model=model, args=args, train_dataset=Clips())
    trainer.train()
    log.info("training done")


if __name__ == "__main__":
    main()
