# Tiny BERT classifier with the HF Trainer, progress bar off (cluster logs), linear schedule with warmup.
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n=12000, seq=24, vocab=2000):
        g = torch.Generator().manual_seed(11)
        self.ids = torch.randint(1, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": int(self.ids[i, 1] > 1000)}


def main():
    cfg = BertConfig(vocab_size=2000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=32, num_labels=2)
    args = TrainingArguments(output_dir="out/bert-pairs", per_device_train_batch_size=16, max_steps=500,
                             learning_rate=2e-4, warmup_steps=50, lr_scheduler_type="linear", logging_steps=10,
                             disable_tqdm=True, save_strategy="no", report_to="none", use_cpu=True, ddp_backend="gloo")
    trainer = Trainer(model=BertForSequenceClassification(cfg), args=args, train_dataset=Pairs())
    trainer.train()
    trainer.save_model("out/bert-pairs/final")
    print("saved to out/bert-pairs/final")


if __name__ == "__main__":
    main()
