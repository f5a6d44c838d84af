"""Headline summarizer-as-classifier stage: a small BERT fine-tuned with transformers.Trainer, launched with
accelerate; the job script passes --resume_from_checkpoint so a requeued job continues where it stopped."""
import logging
import random
import sys

import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)
VOCAB, SEQ, LABELS = 8000, 48, 6


class Headlines(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [([rng.randrange(5, VOCAB) for _ in range(SEQ)], rng.randrange(LABELS)) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, y = self.rows[i]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(y)}


def main():
    (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    if args.should_log:
        transformers.utils.logging.set_verbosity_info()
    logger.setLevel(args.get_process_log_level())
    logger.warning(f"Process rank: {args.process_index}, device: {args.device}, n_gpu: {args.n_gpu}, "
                   f"distributed training: {args.parallel_mode.value == 'distributed'}")
    model = BertForSequenceClassification(BertConfig(vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2,
                                                     num_attention_heads=2, intermediate_size=256,
                                                     max_position_embeddings=SEQ, num_labels=LABELS))
    trainer = Trainer(model=model, args=args, train_dataset=Headlines(20000, 0))
    result = trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    trainer.save_model()
    logger.info(f"train metrics: {result.metrics}")


if __name__ == "__main__":
    main()
