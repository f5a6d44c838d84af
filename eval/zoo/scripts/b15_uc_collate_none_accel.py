"""Intent classifier over chat utterances (embedding bag over word ids), accelerate with Accelerator(cpu=True) over
gloo, 2 processes, 2 DataLoader workers each; a tqdm bar on the main process. Utterances are cleaned in
__getitem__ (URLs, @mentions and emoji codes removed) and padded per batch by a collate function."""
import json
import re
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

NOISE = re.compile(r"https?://\S+|@\w+|:[a-z_]+:")


class Utterances(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]
        self.vocab = {}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        words = NOISE.sub(" ", row["text"]).lower().split()
        if not words:  # nothing left after cleaning: skip
            return None
        ids = [hash(w) % 20000 + 1 for w in words][:48]
        return {"ids": ids, "label": row["intent"]}


def pad_collate(batch):
    width = max(len(b["ids"]) for b in batch)
    ids = torch.zeros(len(batch), width, dtype=torch.long)
    for j, b in enumerate(batch):
        ids[j, : len(b["ids"])] = torch.tensor(b["ids"])
    return ids, torch.tensor([b["label"] for b in batch])


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(20001, 96, mode="mean", padding_idx=0)
        self.head = nn.Sequential(nn.Linear(96, 96), nn.ReLU(), nn.Linear(96, 24))

    def forward(self, ids):
        return self.head(self.emb(ids))


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    ds = Utterances("data/chat_intents.jsonl")
    acc.print(f"{len(ds)} utterances, 24 intents")
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, collate_fn=pad_collate)
    model = BagClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(3):
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=not acc.is_local_main_process)
        for ids, y in bar:
            loss = nn.functional.cross_entropy(model(ids), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        acc.print(f"epoch {epoch} done, loss {loss.item():.4f}")
    acc.wait_for_everyone()
    acc.save(acc.unwrap_model(model).state_dict(), "intent_bag.pt")


if __name__ == "__main__":
    main()
