"""FAQ-matching classifier (small BERT from scratch) with transformers.Trainer on 2 CPU processes (torchrun, gloo).
The eval set is scored before training (eval_on_start) to get the baseline the dashboard compares against; each
rank's DataLoader reads the examples through one worker process (they are decoded from the JSON-lines shards)."""
import datetime
import json
import os

import torch
import torch.distributed as dist
from transformers import (BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments)

# the site's default: fail within half a minute instead of torch's 30 min when a peer stops answering
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
tok = PreTrainedTokenizerFast.from_pretrained("./tok")


class Shard(torch.utils.data.Dataset):
    def __init__(self, path, labels):
        self.rows = [json.loads(line) for line in open(path)]
        self.labels = labels

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        enc = tok(r["q"], padding="max_length", truncation=True, max_length=24)
        return {**enc, "labels": self.labels.index(r["faq"])}


faqs = sorted({json.loads(line)["faq"] for line in open("data/faq-train.jsonl")})
train, evalset = Shard("data/faq-train.jsonl", faqs), Shard("data/faq-eval.jsonl", faqs)
print(f"[rank {rank}] train {len(train)} eval {len(evalset)} examples, {len(faqs)} FAQs", flush=True)
model = BertForSequenceClassification(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2,
                                                 num_attention_heads=2, intermediate_size=128,
                                                 max_position_embeddings=64, num_labels=len(faqs)))
args = TrainingArguments(output_dir="out/faq", per_device_train_batch_size=16, per_device_eval_batch_size=32,
                         num_train_epochs=2, learning_rate=5e-4, logging_steps=10, eval_strategy="epoch",
                         eval_on_start=True, save_strategy="no", report_to=[], use_cpu=True, ddp_backend="gloo",
                         ddp_timeout=25, dataloader_num_workers=1, disable_tqdm=True, seed=3)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evalset)
trainer.train()
print(trainer.evaluate())
