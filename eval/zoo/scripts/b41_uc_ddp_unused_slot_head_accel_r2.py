"""Joint intent + slot model for the assistant NLU, accelerate on CPU. Each process reads its own annotated shard
(data/nlu-0000{i}.jsonl); the slot-tagging loss is added when the batch carries slot tags."""
import json
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

VOCAB, N_INTENT, N_SLOT = 8000, 24, 41


class JointNLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 96, padding_idx=0)
        self.enc = nn.GRU(96, 96, batch_first=True, bidirectional=True)
        self.intent_head = nn.Linear(192, N_INTENT)
        self.slot_head = nn.Linear(192, N_SLOT)

    def forward(self, tok, with_slots):
        h, _ = self.enc(self.emb(tok))
        intent = self.intent_head(h.mean(1))
        return intent, (self.slot_head(h) if with_slots else None)


def load(path):
    rows = [json.loads(line) for line in open(path)]
    return rows


def batches(rows, bs):
    for i in range(0, len(rows) - bs + 1, bs):
        chunk = rows[i:i + bs]
        tok = torch.zeros(bs, 24, dtype=torch.long)
        slots = torch.full((bs, 24), -100, dtype=torch.long)
        has_slots = all("slots" in r for r in chunk)
        for j, r in enumerate(chunk):
            tok[j, :len(r["tokens"])] = torch.tensor(r["tokens"])
            if has_slots:
                slots[j, :len(r["slots"])] = torch.tensor(r["slots"])
        yield tok, torch.tensor([r["intent"] for r in chunk]), (slots if has_slots else None)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    i = acc.process_index
    rows = load(f"data/nlu-{i:05d}.jsonl")
    print(f"[process {i}] data/nlu-{i:05d}.jsonl: {len(rows)} utterances", flush=True)
    model = JointNLU()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    t0 = time.time()
    for step, (tok, intent, slots) in enumerate(batches(rows, 32), 1):
        intent_logits, slot_logits = model(tok, with_slots=slots is not None)
        loss = F.cross_entropy(intent_logits, intent)
        if slots is not None:
            loss = loss + F.cross_entropy(slot_logits.reshape(-1, N_SLOT), slots.reshape(-1))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            print(f"[process {i}] step {step} loss {loss.item():.4f} {(time.time() - t0) * 100:.0f} ms/step",
                  flush=True)
            t0 = time.time()
    acc.wait_for_everyone()
    if acc.is_main_process:
        print("epoch done", flush=True)


if __name__ == "__main__":
    main()
