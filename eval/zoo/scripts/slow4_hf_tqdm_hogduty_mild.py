# Sequence classification with a tiny BERT and the HF Trainer (tqdm progress bar), DDP over gloo.
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Intents(torch.utils.data.Dataset):
    def __init__(self, n=16000, seq=32, vocab=3000):
        g = torch.Generator().manual_seed(3)
        self.ids = torch.randint(1, vocab, (n, seq), generator=g)
        self.y = (self.ids[:, 0] % 7)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.y[i]}


def main():
    cfg = BertConfig(vocab_size=3000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64, num_labels=7)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/bert-intents", per_device_train_batch_size=16, max_steps=700,
                             learning_rate=1e-3, logging_steps=50, save_strategy="no", report_to="none",
                             use_cpu=True, ddp_backend="gloo")
    Trainer(model=model, args=args, train_dataset=Intents()).train()


if __name__ == "__main__":
    main()
