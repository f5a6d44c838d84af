"""Product-title classifier (BERT-small from scratch) with transformers.Trainer on 2 CPU processes; main() is wrapped
in torchelastic's @record so that a failing rank writes its traceback to the error file torchrun gives it
(TORCHELASTIC_ERROR_FILE) and torchrun's summary shows it. Checkpoints go to /scratch-like ckpt/ every 20 steps."""
import json

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from transformers import (BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments)


@record
def main():
    tok = PreTrainedTokenizerFast.from_pretrained("./tok")
    rows = [json.loads(line) for line in open("data/titles.jsonl")]
    cats = sorted({r["cat"] for r in rows})
    enc = tok([r["title"] for r in rows], padding="max_length", truncation=True, max_length=24)
    data = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
             "labels": cats.index(r["cat"])} for i, r in enumerate(rows)]
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=512, max_position_embeddings=64, num_labels=len(cats))
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="ckpt/titles", per_device_train_batch_size=16, num_train_epochs=2,
                             learning_rate=3e-4, logging_steps=5, save_strategy="steps", save_steps=20,
                             save_total_limit=3, report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             disable_tqdm=True, seed=7)
    Trainer(model=model, args=args, train_dataset=data).train()


if __name__ == "__main__":
    main()
