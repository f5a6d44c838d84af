"""Intent classifier (embedding + 2-layer MLP head) fine-tuned with accelerate on CPU workers; resumes from the
last checkpoint (model + AdamW state + step) when --resume is given. Since the last run the model class was
tidied up: the classifier head is now declared before the encoder block."""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator


class IntentModel(nn.Module):
    def __init__(self, vocab=8000, d=96, hidden=192, n_intents=24):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, d, mode="mean")
        self.head = nn.Linear(hidden, n_intents)
        self.encoder = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.LayerNorm(hidden))

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = IntentModel()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    start = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
        acc.print(f"resumed from {args.resume} at step {start}")
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    print(f"[proc {acc.process_index}/{acc.num_processes}] training steps {start + 1}..{args.steps}")
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x = torch.randint(0, 8000, (64, 20), generator=g)
        y = x[:, 0] % 24
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            acc.print(f"step {step} loss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step")
            t0 = time.time()
        if step % 500 == 0:
            acc.wait_for_everyone()
            if acc.is_main_process:
                os.makedirs("ckpt", exist_ok=True)
                torch.save({"model": acc.unwrap_model(model).state_dict(), "optimizer": opt.state_dict(),
                            "step": step}, "ckpt/last.pt")
                acc.print(f"saved ckpt/last.pt at step {step}")
    acc.print("training done")


if __name__ == "__main__":
    main()
