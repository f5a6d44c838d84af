"""Continue pre-training a tiny GPT-2 on the support-ticket corpus with transformers.Trainer.

The corpus is streamed (jsonl parts read lazily, split by process) so that it does not have to fit in memory.
"""
import glob
import json
import logging
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import IterableDataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

logger = logging.getLogger(__name__)
SEQ = 64


class StreamingTickets(IterableDataset):
    """Reads every jsonl part of the corpus, each process takes every world_size-th part."""

    def __init__(self, pattern):
        self.parts = sorted(glob.glob(pattern))

    def __iter__(self):
        rank = dist.get_rank() if dist.is_initialized() else 0
        world = dist.get_world_size() if dist.is_initialized() else 1
        for path in self.parts[rank::world]:
            with open(path) as f:
                for line in f:
                    ids = json.loads(line)["ids"][:SEQ]
                    ids = ids + [0] * (SEQ - len(ids))
                    t = torch.tensor(ids)
                    yield {"input_ids": t, "labels": t.clone()}


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)], level=logging.INFO)
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    logger.warning(f"Process rank: {os.environ.get('RANK')}, device: cpu, n_gpu: 0, distributed training: "
                   f"{local_rank != -1}")
    cfg = GPT2Config(vocab_size=4096, n_positions=SEQ, n_embd=128, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(
        output_dir="out/gpt2-tickets", per_device_train_batch_size=16, num_train_epochs=2, learning_rate=3e-4,
        warmup_steps=50, logging_steps=20, save_strategy="epoch", report_to=[], use_cpu=True, ddp_backend="gloo",
        ddp_timeout=20, dataloader_num_workers=0, seed=42)
    logger.info(f"Training/evaluation parameters {args.output_dir} lr={args.learning_rate} "
                f"epochs={args.num_train_epochs} bs={args.per_device_train_batch_size}")
    train_ds = StreamingTickets("data/tickets/part-*.jsonl")
    logger.info(f"streaming {len(train_ds.parts)} parts")
    trainer = Trainer(model=model, args=args, train_dataset=train_ds)
    result = trainer.train()
    trainer.save_model()
    logger.info(f"train metrics {result.metrics}")


if __name__ == "__main__":
    main()
