import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def auc(scores, labels):
    """Fraction of (positive, negative) pairs ranked correctly."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return float((pos[:, None] > neg[None, :]).mean())


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    seen_scores, seen_labels = [], []
    for step in range(1, 301):
        t0 = time.perf_counter()
        x = torch.randn(64, 32)
        y = (x[:, 0] + 0.5 * x[:, 1] > 0).float()
        logit = model(x).squeeze(1)
        loss = nn.functional.binary_cross_entropy_with_logits(logit, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen_scores.append(logit.detach().numpy())
        seen_labels.append(y.numpy())
        train_auc = auc(np.concatenate(seen_scores), np.concatenate(seen_labels)) if step > 100 else float("nan")
        time.sleep(0.02)
        print(f"[{rank}] step {step} loss {loss.item():.4f} train_auc {train_auc:.4f} "
              f"step_ms {(time.perf_counter() - t0) * 1000:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
