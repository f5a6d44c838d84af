"""Fine-tune a small BERT-style classifier (built from a config, no download) on synthetic review tokens with
transformers.Trainer, launched with accelerate on 2 CPU processes. Checkpoints go to out/reviews-bert-tiny."""
import logging

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = logging.getLogger("finetune_reviews")


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 4000, (n, 64), generator=g)
        self.labels = (self.ids[:, :8].float().mean(1) > 2000).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(64, dtype=torch.long), "labels": self.labels[i]}


def main():
    cfg = BertConfig(vocab_size=4000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=128, num_labels=2)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/reviews-bert-tiny", per_device_train_batch_size=16, max_steps=400,
                             learning_rate=3e-4, logging_steps=20, save_steps=100, save_total_limit=2,
                             use_cpu=True, report_to="none", ddp_backend="gloo", dataloader_num_workers=0,
                             disable_tqdm=False)
    logger.info("train examples: 20000, max_steps %d, save every %d steps to %s", args.max_steps, args.save_steps,
                args.output_dir)
    trainer = Trainer(model=model, args=args, train_dataset=Reviews(20000, 0))
    trainer.train()
    trainer.save_model()
    logger.info("done")


if __name__ == "__main__":
    main()
