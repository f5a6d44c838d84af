import logging

import torch
import torch.distributed as dist
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

logger = logging.getLogger(__name__)


class PackedTokens(Dataset):
    def __init__(self, n, seq_len=64, vocab=1000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class WeightNormLogger(TrainerCallback):
    """Logs the global parameter norm next to the loss."""

    def on_log(self, args, state, control, model=None, logs=None, **kwargs):
        if not state.is_world_process_zero:
            return
        sq = torch.zeros(1)
        for p in model.parameters():
            sq += p.detach().float().pow(2).sum()
        if dist.is_initialized():
            dist.all_reduce(sq)
            sq /= dist.get_world_size()
        logger.info("step %d param_norm %.3f", state.global_step, sq.sqrt().item())


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2))
    args = TrainingArguments(output_dir="out/gpt2", per_device_train_batch_size=8, max_steps=400, learning_rate=5e-4,
                             logging_steps=20, save_strategy="no", report_to="none", use_cpu=True, ddp_timeout=20)
    Trainer(model=model, args=args, train_dataset=PackedTokens(4096), callbacks=[WeightNormLogger()]).train()


if __name__ == "__main__":
    main()
