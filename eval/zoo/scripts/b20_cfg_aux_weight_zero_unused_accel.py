"""Intent classifier for support chats with an auxiliary language-ID head (multi-task), trained with accelerate.
Hyper-parameters come from configs/train.yaml."""
import argparse

import torch
import torch.nn as nn
import yaml
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/train.yaml")
cfg = yaml.safe_load(open(p.parse_args().config))

VOCAB, N_INTENT, N_LANG = 5000, 24, 6


class IntentModel(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, d, mode="mean")
        self.enc = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
        self.intent = nn.Linear(d, N_INTENT)
        self.lang = nn.Linear(d, N_LANG)

    def forward(self, ids):
        h = self.enc(self.emb(ids))
        return self.intent(h), self.lang(h)


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(cfg["seed"])
    n = 12000
    ds = TensorDataset(torch.randint(0, VOCAB, (n, 48)), torch.randint(0, N_INTENT, (n,)), torch.randint(0, N_LANG, (n,)))
    dl = DataLoader(ds, batch_size=cfg["batch_size"], shuffle=True)
    model = IntentModel(cfg["hidden"])
    opt = torch.optim.AdamW(model.parameters(), lr=float(cfg["lr"]))
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"config: {cfg}")
    ce = nn.CrossEntropyLoss()
    for epoch in range(cfg["epochs"]):
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=not acc.is_local_main_process)
        for ids, intent, lang in bar:
            intent_logits, lang_logits = model(ids)
            loss = ce(intent_logits, intent)
            if cfg["aux_weight"] > 0:
                loss = loss + cfg["aux_weight"] * ce(lang_logits, lang)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
    acc.wait_for_everyone()
    if acc.is_main_process:
        torch.save(acc.unwrap_model(model).state_dict(), "intent.pt")
    acc.end_training()


if __name__ == "__main__":
    main()
