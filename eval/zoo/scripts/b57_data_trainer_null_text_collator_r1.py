"""Intent classifier for the support bot (small BERT from scratch) with transformers.Trainer on 2 CPU processes
(torchrun, gloo). The export of the labelled chats is a JSON-lines file; tokenization happens in the collator
(dynamic padding per batch), as the course notebook does it."""
import json

import torch
from transformers import (BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments)

tok = PreTrainedTokenizerFast.from_pretrained("./tok")
rows = [json.loads(line) for line in open("data/chats.jsonl")]
intents = sorted({r["intent"] for r in rows})
label2id = {k: i for i, k in enumerate(intents)}


class Chats(torch.utils.data.Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def collate(batch):
    enc = tok([b["text"] for b in batch], padding=True, truncation=True, max_length=32, return_tensors="pt")
    enc["labels"] = torch.tensor([label2id[b["intent"]] for b in batch])
    return enc


cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128, max_position_embeddings=64, num_labels=len(intents),
                 pad_token_id=tok.pad_token_id)
model = BertForSequenceClassification(cfg)
args = TrainingArguments(output_dir="out/intent", per_device_train_batch_size=16, num_train_epochs=3,
                         learning_rate=5e-4, logging_steps=5, save_strategy="no", report_to=[], use_cpu=True,
                         ddp_backend="gloo", ddp_timeout=30, remove_unused_columns=False, seed=42,
                         disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Chats(rows), data_collator=collate)
trainer.train()
trainer.save_model("out/intent/final")
