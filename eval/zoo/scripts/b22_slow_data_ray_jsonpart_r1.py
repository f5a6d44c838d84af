"""Ray Train: query-embedding classifier on precomputed 1024-d embeddings, DDP over gloo, 2 workers; each worker
streams its own parts of the embedding export in order (emb/worker-R/part-*.npy or .jsonl) and logs its step time
and data wait every 25 steps."""
import glob
import json
import os
import time

import numpy as np
import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

BATCH = 64


def batches(rank):
    root = os.path.join(config_root, f"worker-{rank}")
    for path in sorted(glob.glob(os.path.join(root, "part-*"))):
        if path.endswith(".npy"):
            arr = np.load(path, mmap_mode="r")
            for i in range(0, len(arr) - BATCH + 1, BATCH):
                yield torch.from_numpy(np.array(arr[i:i + BATCH]))
        else:  # .jsonl: {"q": ..., "emb": [...]}
            rows = []
            with open(path) as f:
                for line in f:
                    rows.append(json.loads(line)["emb"])
                    if len(rows) == BATCH:
                        yield torch.tensor(rows, dtype=torch.float32)
                        rows = []


config_root = ""


def train_func(config):
    global config_root
    config_root = config["root"]
    rank = train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 64)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    it = batches(rank)
    data_ms, step_ms, t_end = [], [], time.perf_counter()
    for step in range(1, 401):
        x = next(it)
        t_data = time.perf_counter()
        y = (x[:, :64].argmax(1))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.perf_counter()
        data_ms.append(1000 * (t_data - t_end))
        step_ms.append(1000 * (now - t_end))
        t_end = now
        if step % 25 == 0:
            print(f"[rank {rank}] step {step}/400 loss {loss.item():.4f} data_ms {np.mean(data_ms):.1f} "
                  f"step_ms {np.mean(step_ms):.1f}", flush=True)
            data_ms, step_ms = [], []
    train.report({"loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"root": os.path.abspath("emb")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=30),
                           run_config=RunConfig(name="query-intent-emb", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
