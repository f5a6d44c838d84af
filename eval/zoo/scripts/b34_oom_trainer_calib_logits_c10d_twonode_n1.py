"""Small GPT-2 style language model on product-search queries, trained with transformers.Trainer on CPU (gloo),
one process per node. A Trainer subclass collects the softmaxed logits of every training batch to report the
model's calibration (expected calibration error) at the end of each epoch."""
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Queries(Dataset):
    def __init__(self, n=20000, seq=32, vocab=8000):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


class CalibTrainer(Trainer):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calib_probs = []

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        self.calib_probs.append((outputs.logits.detach().softmax(-1), inputs["labels"]))
        return (loss, outputs) if return_outputs else loss


def main():
    cfg = GPT2Config(vocab_size=8000, n_positions=32, n_embd=128, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir="out/query-lm", use_cpu=True, ddp_backend="gloo", ddp_timeout=20,
                             per_device_train_batch_size=8, num_train_epochs=1, max_steps=300, logging_steps=10,
                             save_strategy="no", report_to="none", learning_rate=5e-4, dataloader_num_workers=0)
    trainer = CalibTrainer(model=model, args=args, train_dataset=Queries())
    trainer.train()


if __name__ == "__main__":
    main()
