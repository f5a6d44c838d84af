"""Sentence encoder fine-tuning with accelerate: the encoder is initialised from the team's pre-trained checkpoint
(fetched from the model registry by the job's prologue), then trained on NLI pairs."""
import argparse

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = get_logger("encoder")


class Encoder(nn.Module):
    def __init__(self, vocab=16000, dim=256):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))

    def forward(self, x):
        return self.proj(self.emb(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--init-from", required=True)
    p.add_argument("--steps", type=int, default=600)
    args = p.parse_args()
    acc = Accelerator(cpu=True)
    log.info(f"{acc.num_processes} processes, init from {args.init_from}", main_process_only=True)
    model = Encoder()
    state = torch.load(args.init_from, map_location="cpu")
    model.load_state_dict(state["model"])
    log.info(f"loaded encoder (step {state.get('step')})", main_process_only=True)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    for step in range(1, args.steps + 1):
        a, b = torch.randint(0, 16000, (2, 64, 24), generator=g)
        za, zb = model(a), model(b)
        loss = nn.functional.cross_entropy(za @ zb.T / 0.05, torch.arange(64))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            log.info(f"step {step}/{args.steps} loss {loss.item():.4f}", main_process_only=True)


if __name__ == "__main__":
    main()
