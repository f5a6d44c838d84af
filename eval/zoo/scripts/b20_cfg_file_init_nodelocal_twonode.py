"""Image classifier (small ResNet-style CNN on 32x32 crops), DDP over gloo, launched the way the old ImageNet
example does: one process per node, --dist-url / --world-size / --rank from the job script."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--dist-url", default="env://")
p.add_argument("--dist-backend", default="gloo")
p.add_argument("--world-size", type=int, default=1)
p.add_argument("--rank", type=int, default=0)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("-b", "--batch-size", type=int, default=64)
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


def main():
    print(f"=> rank {args.rank}: init_process_group(backend={args.dist_backend}, init_method={args.dist_url}, "
          f"world_size={args.world_size})", flush=True)
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url, world_size=args.world_size,
                            rank=args.rank, timeout=datetime.timedelta(seconds=20))
    print(f"=> rank {args.rank}: process group ready", flush=True)
    model = nn.Sequential(block(3, 32), nn.MaxPool2d(2), block(32, 64), nn.MaxPool2d(2), block(64, 128),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 100))
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        end = time.time()
        for i in range(50):
            x, y = torch.randn(args.batch_size, 3, 32, 32), torch.randint(0, 100, (args.batch_size,))
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 0:
                print(f"Epoch: [{epoch}][{i:3d}/50]\tTime {time.time() - end:.3f}\tLoss {loss.item():.4e}", flush=True)
                end = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
