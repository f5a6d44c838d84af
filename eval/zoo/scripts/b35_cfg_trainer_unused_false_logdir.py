"""Joint intent + slot model for a voice assistant, fine-tuned with transformers.Trainer (HfArgumentParser for the
TrainingArguments). This run trains on the intent-only export (no slot tags)."""
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import HfArgumentParser, Trainer, TrainingArguments, set_seed


@dataclass
class DataArgs:
    vocab_size: int = field(default=8000)
    num_intents: int = field(default=64)
    num_slot_tags: int = field(default=41)
    max_len: int = field(default=32)


class Utterances(Dataset):
    def __init__(self, n, a: DataArgs, seed):
        g = torch.Generator().manual_seed(seed)
        self.intent = torch.randint(0, a.num_intents, (n,), generator=g)
        self.ids = (self.intent[:, None] * 97 + torch.randint(0, 400, (n, a.max_len), generator=g)) % a.vocab_size

    def __len__(self):
        return len(self.intent)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.intent[i]}


class JointIntentSlot(nn.Module):
    def __init__(self, a: DataArgs, d=192):
        super().__init__()
        self.emb = nn.Embedding(a.vocab_size, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 384, batch_first=True), 2)
        self.intent_head = nn.Linear(d, a.num_intents)
        self.slot_head = nn.Linear(d, a.num_slot_tags)

    def forward(self, input_ids, labels=None, slot_labels=None):
        h = self.enc(self.emb(input_ids))
        intent_logits = self.intent_head(h.mean(1))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(intent_logits, labels)
        if slot_labels is not None:
            slot_logits = self.slot_head(h)
            loss = loss + F.cross_entropy(slot_logits.flatten(0, 1), slot_labels.flatten(), ignore_index=-100)
        return {"loss": loss, "logits": intent_logits}


def main():
    data_args, args = HfArgumentParser((DataArgs, TrainingArguments)).parse_args_into_dataclasses()
    set_seed(args.seed)
    model = JointIntentSlot(data_args)
    trainer = Trainer(model=model, args=args, train_dataset=Utterances(20000, data_args, 0),
                      eval_dataset=Utterances(1000, data_args, 1))
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
