"""Review-sentiment classifier fine-tuned with transformers.Trainer (a small DistilBERT-style BERT built from a
config), arguments from the command line in the HF examples' style (HfArgumentParser)."""
import logging
import random
import sys
from dataclasses import dataclass, field

import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)
VOCAB, SEQ = 8000, 64


@dataclass
class ModelArguments:
    hidden_size: int = field(default=96)
    num_layers: int = field(default=2)
    max_train_samples: int = field(default=16000)


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [([rng.randrange(5, VOCAB) for _ in range(SEQ)], rng.randrange(2)) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, y = self.rows[i]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(y)}


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    margs, targs = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = targs.get_process_log_level()
    logger.setLevel(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    logger.warning(f"Process rank: {targs.local_process_index}, device: {targs.device}, n_gpu: {targs.n_gpu}, "
                   f"distributed training: {targs.parallel_mode.value == 'distributed'}")
    logger.info(f"Training/evaluation parameters {targs}")
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=margs.hidden_size, num_hidden_layers=margs.num_layers,
                     num_attention_heads=2, intermediate_size=2 * margs.hidden_size, max_position_embeddings=SEQ,
                     num_labels=2)
    model = BertForSequenceClassification(cfg)
    train_ds, eval_ds = Reviews(margs.max_train_samples, 0), Reviews(800, 1)
    trainer = Trainer(model=model, args=targs, train_dataset=train_ds, eval_dataset=eval_ds)
    result = trainer.train()
    trainer.save_model()
    trainer.log_metrics("train", result.metrics)


if __name__ == "__main__":
    main()
