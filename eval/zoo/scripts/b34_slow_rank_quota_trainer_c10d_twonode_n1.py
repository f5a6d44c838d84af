"""Small GPT-2 style model fine-tuned on support-chat turns with transformers.Trainer on CPU (gloo), one process
per node; a callback prints each node's own step time every 20 steps (each node's operator watches their
terminal)."""
import os
import time

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Turns(Dataset):
    def __init__(self, n=20000, seq=48, vocab=6000):
        self.x = torch.randint(0, vocab, (n, seq), generator=torch.Generator().manual_seed(1))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.t0 = None
        self.node = os.environ.get("GROUP_RANK", "0")

    def on_train_begin(self, args, state, control, **kw):
        self.t0 = time.time()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % 20 == 0:
            dt = (time.time() - self.t0) / 20
            print(f"[node{self.node}] step {state.global_step}/{state.max_steps} {dt * 1000:.0f} ms/step", flush=True)
            self.t0 = time.time()


def main():
    model = GPT2LMHeadModel(GPT2Config(vocab_size=6000, n_positions=48, n_embd=128, n_layer=2, n_head=4,
                                       bos_token_id=0, eos_token_id=0))
    args = TrainingArguments(output_dir="out/chat-lm", use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             per_device_train_batch_size=8, max_steps=300, logging_steps=50, save_strategy="no",
                             report_to="none", learning_rate=3e-4, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Turns(), callbacks=[StepTimer()])
    trainer.train()


if __name__ == "__main__":
    main()
