"""Query-to-category regressor for product search (two embedding towers + MLP, cosine-similarity target) trained with
transformers.Trainer on 2 CPU processes; a callback prints the training progress on the main process."""
import time

import torch
import torch.nn as nn
from transformers import Trainer, TrainerCallback, TrainingArguments


class Matcher(nn.Module):
    def __init__(self, n_query=30000, n_cat=2000, dim=96):
        super().__init__()
        self.q = nn.EmbeddingBag(n_query, dim, mode="sum")
        self.c = nn.Embedding(n_cat, dim)
        self.mlp = nn.Sequential(nn.Linear(3 * dim, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, query_ids, cat_id, labels=None):
        q, c = self.q(query_ids), self.c(cat_id)
        pred = self.mlp(torch.cat([q, c, q * c], dim=1)).squeeze(1)
        loss = nn.functional.mse_loss(pred, labels) if labels is not None else None
        return {"loss": loss, "pred": pred}


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.qi = torch.randint(0, 30000, (n, 12), generator=g)
        self.ci = torch.randint(0, 2000, (n,), generator=g)
        self.y = ((self.qi[:, 0] % 2000 - self.ci).abs() < 200).float()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"query_ids": self.qi[i], "cat_id": self.ci[i], "labels": self.y[i]}


class Progress(TrainerCallback):
    def on_train_begin(self, args, state, control, **kw):
        self.t0 = time.time()

    def on_log(self, args, state, control, logs=None, **kw):
        if state.is_world_process_zero and logs and "loss" in logs:
            print(f"[{time.time() - self.t0:6.1f}s] step {state.global_step}/{state.max_steps} "
                  f"loss {logs['loss']:.4f} lr {logs['learning_rate']:.2e}", flush=True)


def main():
    torch.manual_seed(0)
    args = TrainingArguments(output_dir="out/matcher", per_device_train_batch_size=64, max_steps=600,
                             learning_rate=2e-3, warmup_steps=50, logging_steps=25, save_strategy="no",
                             report_to=[], use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=Matcher(), args=args, train_dataset=Pairs(40000, 47), callbacks=[Progress()])
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
