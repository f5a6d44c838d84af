"""Character-level language model (embedding + GRU) trained with DDP under torchrun; a small Trainer class holds the
loop, and the module-level setup() brings up the process group before the Trainer is built."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    return dist.get_rank(), dist.get_world_size()


def init_distributed(backend="gloo"):
    """Copied from the team's utils: join the job's process group (env:// from torchrun)."""
    dist.init_process_group(backend=backend, init_method="env://", timeout=datetime.timedelta(seconds=25))
    return int(os.environ["LOCAL_RANK"])


class CharLM(nn.Module):
    def __init__(self, vocab=96, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


class Trainer:
    def __init__(self, model, lr=2e-3):
        self.local_rank = init_distributed()
        self.model = DDP(model)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

    def fit(self, steps, rank):
        g = torch.Generator().manual_seed(rank)
        for step in range(1, steps + 1):
            x = torch.randint(0, 96, (16, 65), generator=g)
            loss = F.cross_entropy(self.model(x[:, :-1]).reshape(-1, 96), x[:, 1:].reshape(-1))
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if rank == 0 and step % 20 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)


def main():
    rank, world = setup()
    print(f"rank {rank} of {world}: process group ready", flush=True)
    Trainer(CharLM()).fit(100, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
