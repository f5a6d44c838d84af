"""Ray Train: keyword spotting from length-prefixed record files (data/mfcc-part-<rank>.rec, one per worker) read with
the team's fastrec reader, DDP over gloo, 2 workers, 2 DataLoader workers each."""
import os

import fastrec
import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model
from torch.utils.data import DataLoader, Dataset

DATA = os.path.abspath("data")


class MfccRecords(Dataset):
    def __init__(self, path):
        self.path = path
        self.n = fastrec.count(path)
        self.rf = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.rf is None:  # opened lazily, once per DataLoader worker
            self.rf = fastrec.RecordFile(self.path)
        feats, label = self.rf.read(i)
        return torch.from_numpy(feats).view(40, 32), label


def train_func(config):
    rank = train.get_context().get_world_rank()
    ds = MfccRecords(os.path.join(DATA, f"mfcc-part-{rank}.rec"))
    print(f"[worker {rank}] {len(ds)} records in mfcc-part-{rank}.rec")
    dl = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
    model = prepare_model(nn.Sequential(nn.Flatten(), nn.Linear(40 * 32, 256), nn.ReLU(), nn.Linear(256, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        for i, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 0:
                print(f"[worker {rank}] epoch {epoch} batch {i}/{len(dl)} loss {loss.item():.4f}")
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="kws-fastrec"))
    result = trainer.fit()
    print(result.metrics)
