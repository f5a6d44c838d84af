"""Support-chat language model, continued from the last checkpoint after the chat template landed. The tokenizer
lives in tokenizer/ (vocab.txt + added_tokens.json); the model's embedding is sized from the tokenizer.
Launched with `accelerate launch --config_file`."""
import argparse
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator


def load_tokenizer(path):
    with open(os.path.join(path, "vocab.txt")) as fh:
        vocab = [w.rstrip("\n") for w in fh]
    added = []
    if os.path.exists(os.path.join(path, "added_tokens.json")):
        with open(os.path.join(path, "added_tokens.json")) as fh:
            added = sorted(json.load(fh), key=lambda t: t["id"])
    return vocab + [t["content"] for t in added]


class ChatLM(nn.Module):
    def __init__(self, vocab_size, d=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d)
        block = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.lm_head = nn.Linear(d, vocab_size, bias=False)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
        return self.lm_head(self.blocks(self.embed(ids), mask=mask, is_causal=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume", default=None)
    ap.add_argument("--tokenizer", default="tokenizer")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    tok = load_tokenizer(args.tokenizer)
    acc.print(f"tokenizer {args.tokenizer}: {len(tok)} tokens (last: {tok[-3:]})")
    model = ChatLM(len(tok))
    start = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cpu")
        acc.print(f"resuming from {args.resume} (step {ckpt['step']}, saved with {ckpt['tokenizer_size']} tokens)")
        model.load_state_dict(ckpt["model"])
        start = ckpt["step"]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model, opt = acc.prepare(model, opt)
    data = torch.load(f"data/chat_tokens_{acc.process_index}.pt")
    for step in range(start + 1, start + args.steps + 1):
        i = (step * 16) % (len(data) - 16)
        ids = data[i:i + 16]
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 20 == 0:
            acc.print(f"step {step} loss {loss.item():.4f}")
    acc.print("done")


if __name__ == "__main__":
    main()
