"""Small causal LM (GPT-2 built from a config, no download) trained with transformers.Trainer on a synthetic code
corpus, with token accuracy as the evaluation metric; arguments through HfArgumentParser as in the HF examples."""
import logging
import sys
from dataclasses import dataclass

import numpy as np
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


@dataclass
class DataArgs:
    train_examples: int = 4000
    eval_examples: int = 1200
    block_size: int = 64
    vocab_size: int = 8000


class Blocks(torch.utils.data.Dataset):
    def __init__(self, n, block, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, block), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def compute_metrics(p):
    preds = np.argmax(p.predictions[:, :-1], axis=-1)
    labels = p.label_ids[:, 1:]
    return {"token_accuracy": float((preds == labels).mean())}


def main():
    parser = HfArgumentParser((DataArgs, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    logger.setLevel(logging.INFO if training_args.should_log else logging.WARN)
    logger.warning(f"Process rank: {training_args.local_rank}, device: {training_args.device}, "
                   f"distributed training: {training_args.parallel_mode.value == 'distributed'}")
    config = GPT2Config(vocab_size=data_args.vocab_size, n_positions=data_args.block_size, n_embd=64, n_layer=2,
                        n_head=2)
    model = GPT2LMHeadModel(config)
    train = Blocks(data_args.train_examples, data_args.block_size, data_args.vocab_size, 0)
    evals = Blocks(data_args.eval_examples, data_args.block_size, data_args.vocab_size, 1)
    trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=evals,
                      compute_metrics=compute_metrics)
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
