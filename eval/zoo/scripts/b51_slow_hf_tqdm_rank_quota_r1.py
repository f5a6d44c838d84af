"""Support-ticket intent classifier: a small BERT (2 layers, from a config, no download) fine-tuned with
transformers.Trainer on CPU under torchrun (gloo). The Trainer's own progress bar and log dicts are the only
output."""
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

N_INTENTS = 12


class Tickets(torch.utils.data.Dataset):
    """Tokenised tickets (already padded to 48 word pieces) with their intent."""

    def __init__(self, n=12000, seq=48, vocab=6000):
        g = torch.Generator().manual_seed(3)
        self.ids = torch.randint(100, vocab, (n, seq), generator=g)
        self.label = self.ids[:, :6].sum(1) % N_INTENTS

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.label[i]}


def main():
    cfg = BertConfig(vocab_size=6000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=512, max_position_embeddings=64, num_labels=N_INTENTS)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/intent-bert", per_device_train_batch_size=16, max_steps=100,
                             learning_rate=2e-4, warmup_steps=10, logging_steps=10, save_strategy="no",
                             report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             dataloader_num_workers=0, seed=3)
    trainer = Trainer(model=model, args=args, train_dataset=Tickets())
    trainer.train()


if __name__ == "__main__":
    main()
