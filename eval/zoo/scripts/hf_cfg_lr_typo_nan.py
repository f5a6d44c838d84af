import logging
import math
from dataclasses import dataclass, field

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    n_layer: int = field(default=2)
    n_embd: int = field(default=64)
    vocab_size: int = field(default=1000)


class PackedTokens(Dataset):
    def __init__(self, n, seq_len=64, vocab=1000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class GuardedTrainer(Trainer):
    """Stops the run on a non-finite loss instead of burning the allocation on NaNs."""

    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        out = super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)
        loss = out[0] if return_outputs else out
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"non-finite loss {loss.item()} at step {self.state.global_step}")
        return out


def main():
    margs, targs = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    logger.info("lr=%s warmup=%s batch=%s", targs.learning_rate, targs.warmup_steps, targs.per_device_train_batch_size)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=margs.vocab_size, n_positions=64, n_embd=margs.n_embd,
                                       n_layer=margs.n_layer, n_head=2))
    GuardedTrainer(model=model, args=targs, train_dataset=PackedTokens(4096)).train()


if __name__ == "__main__":
    main()
