import datetime
import json

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB_SIZE = 8000  # tokenizer.json of the run


class TinyLM(nn.Module):
    def __init__(self, vocab, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.out(h)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    with open(f"data/tokenized/part-{rank:02d}.json") as f:
        seqs = json.load(f)
    ids = torch.tensor(seqs)
    print(f"rank {rank}: {ids.shape[0]} sequences of {ids.shape[1]} tokens", flush=True)
    model = DDP(TinyLM(VOCAB_SIZE))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(0, ids.shape[0], 8):
        batch = ids[step:step + 8]
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0:
            print(f"rank {rank} step {step // 8} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
