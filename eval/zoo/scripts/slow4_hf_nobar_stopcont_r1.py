# Tiny Llama-style causal LM on a synthetic corpus with the HF Trainer. Logging set up as in the HF example scripts.
import logging
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

logger = logging.getLogger(__name__)


class Corpus(torch.utils.data.Dataset):
    def __init__(self, n=12000, seq=32, vocab=1000):
        g = torch.Generator().manual_seed(7)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class LogToLogger(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            logger.info(f"step {state.global_step}: {logs}")


def main():
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
    args = TrainingArguments(output_dir="out/llama-tiny", per_device_train_batch_size=8, max_steps=1400,
                             learning_rate=5e-4, lr_scheduler_type="cosine", warmup_steps=30, logging_steps=20,
                             disable_tqdm=True, save_strategy="no", report_to="none", use_cpu=True, ddp_backend="gloo",
                             log_level="info")
    logger.setLevel(args.get_process_log_level())
    transformers.utils.logging.set_verbosity(args.get_process_log_level())
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg)
    logger.info(f"model parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    trainer = Trainer(model=model, args=args, train_dataset=Corpus(), callbacks=[LogToLogger()])
    result = trainer.train()
    logger.info(f"train metrics: {result.metrics}")


if __name__ == "__main__":
    main()
