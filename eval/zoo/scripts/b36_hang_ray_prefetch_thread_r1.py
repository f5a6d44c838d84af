"""Query-intent classifier trained with Ray Train (TorchTrainer, 2 CPU workers, gloo). Each worker reads its own
JSON-lines shard (data/part-R.jsonl) through a background prefetch thread that tokenizes records into batches."""
import json
import os
import queue
import threading

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

LABELS = ["weather", "music", "alarm", "navigation", "shopping", "news", "timer", "smalltalk"]


def tokenize(text, vocab=8192, n=16):
    ids = [hash(w) % vocab for w in text.lower().split()][:n]
    return ids + [0] * (n - len(ids))


class Prefetcher(threading.Thread):
    def __init__(self, path, batch_size):
        super().__init__(daemon=True, name="prefetch")
        self.path, self.bs, self.q = path, batch_size, queue.Queue(maxsize=4)

    def run(self):
        while True:
            xs, ys = [], []
            with open(self.path) as fh:
                for line in fh:
                    rec = json.loads(line)
                    xs.append(tokenize(rec["text"]))
                    ys.append(LABELS.index(rec["intent"]))
                    if len(xs) == self.bs:
                        self.q.put((torch.tensor(xs), torch.tensor(ys)))
                        xs, ys = [], []

    def __iter__(self):
        while True:
            yield self.q.get()


def train_loop(config):
    rank = ray.train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(8192, 64), nn.Linear(64, 64), nn.ReLU(),
                                        nn.Linear(64, len(LABELS))))
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    pf = Prefetcher(os.path.join(config["data_dir"], f"part-{rank}.jsonl"), config["batch_size"])
    pf.start()
    for step, (x, y) in enumerate(pf, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"worker {rank} step {step}/{config['steps']} loss {loss.item():.4f}")
        if step == config["steps"]:
            break
    ray.train.report({"loss": loss.item()})


def main():
    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(train_loop, train_loop_config={"data_dir": os.path.abspath("data"), "lr": 1e-3, "batch_size": 32, "steps": 400},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20))
    result = trainer.fit()
    print("final metrics:", result.metrics)


if __name__ == "__main__":
    main()
