"""Question-answer retrieval fine-tuning with accelerate; each process reads its own JSON-lines shard lazily (byte
offsets indexed at start) in a Dataset with 2 DataLoader workers; tqdm bar on the main process."""
import json

import torch
import torch.nn as nn
from accelerate import Accelerator
from tqdm.auto import tqdm


class JsonlShard(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path, self.offsets = path, []
        with open(path, "rb") as f:
            pos = 0
            for line in f:
                self.offsets.append(pos)
                pos += len(line)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        q = [hash(w) % 20000 for w in rec["question"].split()][:24]
        a = [hash(w) % 20000 for w in rec["answer"].split()][:48]
        return torch.tensor(q + [0] * (24 - len(q))), torch.tensor(a + [0] * (48 - len(a)))


def main():
    acc = Accelerator(cpu=True)
    ds = JsonlShard(f"data/qa/shard-{acc.process_index:02d}.jsonl")
    acc.print(f"shard-{acc.process_index:02d}.jsonl: {len(ds)} pairs")
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2)
    enc = nn.EmbeddingBag(20000, 128)
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
    enc, opt = acc.prepare(enc, opt)
    for epoch in range(2):
        for q, a in tqdm(loader, desc=f"epoch {epoch}", disable=not acc.is_local_main_process):
            s = nn.functional.normalize(enc(q), dim=-1) @ nn.functional.normalize(enc(a), dim=-1).T
            loss = nn.functional.cross_entropy(s / 0.05, torch.arange(len(q)))
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
    acc.print("done")


if __name__ == "__main__":
    main()
