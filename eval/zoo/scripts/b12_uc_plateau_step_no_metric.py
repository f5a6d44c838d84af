"""Sentiment regression on review embeddings with accelerate. The LR schedule was switched from cosine to
ReduceLROnPlateau (patience 2 on the validation loss) after the last sweep."""
import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 96, generator=g)
    y = torch.tanh(x[:, :8].sum(1, keepdim=True) / 3)
    return TensorDataset(x, y)


def main():
    accelerator = Accelerator(cpu=True)
    set_seed(7)
    model = nn.Sequential(nn.Linear(96, 256), nn.GELU(), nn.Dropout(0.1), nn.Linear(256, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
    train_dl = DataLoader(make_split(12800, 0), batch_size=64, shuffle=True)
    val_dl = DataLoader(make_split(2048, 1), batch_size=256)
    model, opt, train_dl, val_dl, sched = accelerator.prepare(model, opt, train_dl, val_dl, sched)
    accelerator.print(f"num_processes={accelerator.num_processes} steps/epoch={len(train_dl)}")
    for epoch in range(5):
        model.train()
        bar = tqdm(train_dl, desc=f"epoch {epoch}", disable=not accelerator.is_local_main_process)
        for x, y in bar:
            loss = nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            bar.set_postfix(loss=f"{loss.item():.4f}", lr=opt.param_groups[0]["lr"])
        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for x, y in val_dl:
                out, tgt = accelerator.gather_for_metrics((model(x), y))
                tot += nn.functional.mse_loss(out, tgt, reduction="sum").item()
                n += len(tgt)
        val_loss = tot / n
        accelerator.print(f"epoch {epoch}: val_loss {val_loss:.4f}")
        sched.step()
    accelerator.wait_for_everyone()
    accelerator.save_model(model, "out/sentiment-reg")


if __name__ == "__main__":
    main()
