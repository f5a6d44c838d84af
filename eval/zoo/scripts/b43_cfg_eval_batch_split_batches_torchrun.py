"""Review-rating regressor (bag of hashed n-grams + MLP) with accelerate's Accelerator under torchrun. Batch sizes in
configs/rating.json are global (split_batches=True: each process gets batch_size / num_processes). The evaluation
loader is built and prepared the first time the model is evaluated."""
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, DataLoaderConfiguration
from torch.utils.data import DataLoader, TensorDataset

cfg = json.load(open("configs/rating.json"))
acc = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(split_batches=True))
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
X = torch.randint(0, cfg["buckets"], (6000, 48), generator=g)
w = torch.randn(cfg["buckets"], generator=g) * 0.05
Y = (w[X].sum(1) + 3.0).clamp(1, 5)
train = TensorDataset(X[:5000], Y[:5000])
held_out = TensorDataset(X[5000:], Y[5000:])

model = nn.Sequential(nn.EmbeddingBag(cfg["buckets"], 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
train_dl = DataLoader(train, batch_size=cfg["train_batch_size"], shuffle=True, drop_last=True)
model, opt, train_dl = acc.prepare(model, opt, train_dl)
acc.print(f"{acc.num_processes} processes, global batch {cfg['train_batch_size']}, "
          f"{len(train_dl)} steps per epoch")
eval_dl = None


def evaluate(step):
    global eval_dl
    if eval_dl is None:
        eval_dl = acc.prepare(DataLoader(held_out, batch_size=cfg["eval_batch_size"]))
    model.eval()
    se = n = 0.0
    with torch.no_grad():
        for x, y in eval_dl:
            err = acc.gather_for_metrics((model(x).squeeze(1) - y) ** 2)
            se += err.sum().item()
            n += len(err)
    model.train()
    acc.print(f"step {step}: eval rmse {(se / n) ** 0.5:.4f}")


step, t0 = 0, time.time()
for epoch in range(cfg["epochs"]):
    for x, y in train_dl:
        step += 1
        loss = F.mse_loss(model(x).squeeze(1), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            acc.print(f"epoch {epoch} step {step} mse {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step")
            t0 = time.time()
        if step % cfg["eval_every"] == 0:
            evaluate(step)
acc.print("done")
