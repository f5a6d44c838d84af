"""Named-entity tagger for shipping documents: a small BERT token-classification model (from a config, no
download) fine-tuned with transformers.Trainer on 3 CPU processes (gloo under torchrun, each rank's output in the
launcher's --log-dir). Only the Trainer's own output: its progress bar and log dicts on the main process."""
import torch
from transformers import BertConfig, BertForTokenClassification, Trainer, TrainingArguments

TAGS = ["O", "B-SHIPPER", "I-SHIPPER", "B-PORT", "I-PORT", "B-DATE", "I-DATE", "B-WEIGHT", "I-WEIGHT"]


class Docs(torch.utils.data.Dataset):
    def __init__(self, n=9000, seq=40, vocab=5000):
        g = torch.Generator().manual_seed(5)
        self.ids = torch.randint(100, vocab, (n, seq), generator=g)
        self.tags = (self.ids % 17).clamp(max=len(TAGS) - 1)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.tags[i]}


def main():
    cfg = BertConfig(vocab_size=5000, hidden_size=96, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=384, max_position_embeddings=64, num_labels=len(TAGS))
    model = BertForTokenClassification(cfg)
    args = TrainingArguments(output_dir="out/shipping-ner", per_device_train_batch_size=16, max_steps=100,
                             learning_rate=3e-4, lr_scheduler_type="cosine", warmup_steps=5, logging_steps=5,
                             save_strategy="no", report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             dataloader_num_workers=0, seed=5)
    Trainer(model=model, args=args, train_dataset=Docs()).train()


if __name__ == "__main__":
    main()
