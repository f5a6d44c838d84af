# Small BERT-style sentence classifier with the HF Trainer: warm-up, evaluation every 100 steps, a checkpoint
# every 150 steps (save_pretrained + optimizer state).
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Sentences(torch.utils.data.Dataset):
    def __init__(self, n, seed, seq=32, vocab=3000):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, vocab, (n, seq), generator=g)
        self.labels = (self.ids[:, 1] % 3).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def main():
    cfg = BertConfig(vocab_size=3000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=256, max_position_embeddings=64, num_labels=3)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/bert-topic", per_device_train_batch_size=16,
                             per_device_eval_batch_size=64, max_steps=600, learning_rate=3e-4, warmup_steps=60,
                             logging_steps=20, eval_strategy="steps", eval_steps=100, save_strategy="steps",
                             save_steps=150, save_total_limit=2, report_to="none", use_cpu=True, ddp_backend="gloo",
                             dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Sentences(20000, 0), eval_dataset=Sentences(1024, 1))
    trainer.train()
    trainer.save_model("out/bert-topic/final")


if __name__ == "__main__":
    main()
