"""Product-description language model (a small GPT-2 built from a config) with transformers.Trainer, DDP over gloo on
two CPU processes; HF examples' logging."""
import logging
import random
import sys

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

logger = logging.getLogger(__name__)
VOCAB, SEQ = 5000, 64


class Blocks(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [[rng.randrange(VOCAB) for _ in range(SEQ)] for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids = torch.tensor(self.rows[i])
        return {"input_ids": ids, "labels": ids}


def main():
    args = TrainingArguments(output_dir="out/desc-gpt2", per_device_train_batch_size=16, max_steps=400,
                             learning_rate=3e-4, warmup_steps=40, logging_steps=25, save_strategy="no", use_cpu=True,
                             ddp_backend="gloo", report_to=[], disable_tqdm=True)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    logger.setLevel(args.get_process_log_level())
    transformers.utils.logging.set_verbosity(args.get_process_log_level())
    logger.warning(f"Process rank: {args.process_index}, device: {args.device}, distributed training: "
                   f"{args.parallel_mode.value == 'distributed'}")
    model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=128, n_layer=2, n_head=4))
    trainer = Trainer(model=model, args=args, train_dataset=Blocks(12000, 0))
    result = trainer.train()
    logger.info(f"train metrics: {result.metrics}")


if __name__ == "__main__":
    main()
