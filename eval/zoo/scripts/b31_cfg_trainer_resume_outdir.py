"""Review-sentiment classifier (a small BERT built from a config) fine-tuned with transformers.Trainer, DDP over
gloo; the HF example scripts' argument parsing and logging."""
import logging
import sys
from dataclasses import dataclass, field

import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


@dataclass
class DataArguments:
    max_seq_length: int = field(default=64)
    train_size: int = field(default=4000)


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n, seq, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 8000, (n, seq), generator=g)
        self.labels = (self.ids[:, 1] % 2).tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def main():
    parser = HfArgumentParser((DataArguments, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    logger.warning(f"Process rank: {training_args.local_process_index}, device: {training_args.device}, "
                   f"n_gpu: {training_args.n_gpu}, distributed training: {training_args.parallel_mode.value == 'distributed'}")
    logger.info(f"Training/evaluation parameters {training_args}")
    cfg = BertConfig(vocab_size=8000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=256, max_position_embeddings=128, num_labels=2)
    model = BertForSequenceClassification(cfg)
    train = Reviews(data_args.train_size, data_args.max_seq_length, 0)
    trainer = Trainer(model=model, args=training_args, train_dataset=train)
    checkpoint = training_args.resume_from_checkpoint
    if checkpoint is not None:
        logger.info(f"Resuming training from {checkpoint}")
    result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model()
    trainer.log_metrics("train", result.metrics)


if __name__ == "__main__":
    main()
