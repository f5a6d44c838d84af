"""NER tagger (BiLSTM over word ids) trained with accelerate on the team's dev box before the cluster run; launched with
the repository's accelerate config file (configs/accelerate.yaml), which the script never overrides."""
import logging

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger(__name__)


class Tagger(nn.Module):
    def __init__(self, vocab=20000, dim=128, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, tags)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def main():
    acc = Accelerator()
    log.info(acc.state, main_process_only=False)
    torch.manual_seed(0)
    x = torch.randint(0, 20000, (4096, 48))
    y = torch.randint(0, 9, (4096, 48))
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
    model = Tagger()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for epoch in range(3):
        for step, (xb, yb) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(xb).flatten(0, 1), yb.flatten())
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            if step % 20 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    acc.wait_for_everyone()
    acc.save_model(model, "out/ner-tagger")


if __name__ == "__main__":
    main()
