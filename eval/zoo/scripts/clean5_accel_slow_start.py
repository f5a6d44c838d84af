"""Intent classifier with accelerate: builds its vocabulary from the raw corpus on every process at start-up
(slow), then trains 3 epochs; mixed-precision code path kept from the GPU version of the script."""
import collections
import random
import time

import torch
import torch.nn as nn
from accelerate import Accelerator


def build_vocab(n_docs=1_000_000, seed=0):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    counts = collections.Counter()
    for _ in range(n_docs):
        counts.update(rng.choice(words) for _ in range(rng.randint(10, 40)))
    return {w: i + 1 for i, (w, _) in enumerate(counts.most_common(4000))}


def main():
    acc = Accelerator(cpu=True)
    t0 = time.time()
    acc.print("building vocabulary from raw corpus (1M docs)...")
    vocab = build_vocab()
    acc.print(f"vocabulary: {len(vocab)} entries in {time.time() - t0:.1f}s")
    scaler = torch.cuda.amp.GradScaler(enabled=False)  # kept from the GPU script
    model = nn.Sequential(nn.EmbeddingBag(len(vocab) + 1, 128), nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), 2e-3)
    g = torch.Generator().manual_seed(acc.process_index)
    x = torch.randint(1, len(vocab) + 1, (48000, 24), generator=g)
    y = x[:, 0] % 10
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
    model, opt, loader = acc.prepare(model, opt, loader)
    for epoch in range(3):
        t = time.time()
        for i, (xb, yb) in enumerate(loader, start=1):
            loss = nn.functional.cross_entropy(model(xb), yb)
            acc.backward(scaler.scale(loss))
            opt.step()
            opt.zero_grad()
            if i % 50 == 0:
                acc.print(f"Epoch {epoch + 1} Batch {i}/{len(loader)} loss={loss.item():.4f} "
                          f"{50 / (time.time() - t):.1f} it/s")
                t = time.time()
    acc.wait_for_everyone()
    if acc.is_main_process:
        torch.save(acc.unwrap_model(model).state_dict(), "intent_model.pt")
    acc.print("Training completed. Model saved to intent_model.pt")


if __name__ == "__main__":
    main()
