"""Ticket router (small BERT from scratch) with transformers.Trainer on 2 CPU processes (torchrun, gloo). The
hyperparameters live in configs/train_args.json, read with HfArgumentParser so that a sweep only edits the file."""
import json
import sys

import torch
from transformers import (BertConfig, BertForSequenceClassification, HfArgumentParser, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments)

cfg_path = sys.argv[1] if len(sys.argv) > 1 else "configs/train_args.json"
(args,) = HfArgumentParser(TrainingArguments).parse_json_file(cfg_path)
print(f"[rank {args.process_index}] loaded {cfg_path}: lr={args.learning_rate} sched={args.lr_scheduler_type}")
tok = PreTrainedTokenizerFast.from_pretrained("./tok")
rows = [json.loads(line) for line in open("data/tickets.jsonl")]
queues = sorted({r["queue"] for r in rows})
enc = tok([r["text"] for r in rows], padding="max_length", truncation=True, max_length=24)
data = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
         "labels": queues.index(r["queue"])} for i, r in enumerate(rows)]
model = BertForSequenceClassification(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2,
                                                 num_attention_heads=2, intermediate_size=128,
                                                 max_position_embeddings=64, num_labels=len(queues)))
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
