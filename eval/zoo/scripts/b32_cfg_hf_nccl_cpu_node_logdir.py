"""Intent classifier: a tiny BERT (built from a config, no download) fine-tuned with transformers.Trainer on
synthetic utterances; arguments through HfArgumentParser as in the HF example scripts."""
import logging
import sys
from dataclasses import dataclass

import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


@dataclass
class DataArgs:
    num_examples: int = 4000
    max_len: int = 32
    num_labels: int = 12


class Utterances(torch.utils.data.Dataset):
    def __init__(self, n, max_len, num_labels, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 3000, (n, max_len), generator=g)
        self.labels = torch.randint(0, num_labels, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def main():
    parser = HfArgumentParser((DataArgs, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    logger.setLevel(logging.INFO if training_args.should_log else logging.WARN)
    transformers.utils.logging.set_verbosity_info() if training_args.should_log else None
    logger.warning(f"Process rank: {training_args.local_rank}, device: {training_args.device}, "
                   f"n_gpu: {training_args.n_gpu}, distributed training: {training_args.parallel_mode.value == 'distributed'}")
    config = BertConfig(vocab_size=3000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=256, num_labels=data_args.num_labels)
    model = BertForSequenceClassification(config)
    train = Utterances(data_args.num_examples, data_args.max_len, data_args.num_labels, 0)
    trainer = Trainer(model=model, args=training_args, train_dataset=train)
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
