"""Tabular classifier, torchvision-reference-style loop (MetricLogger, print on the main process only).

Each rank streams its own directory of exported parts: data/rank<R>/part-XXXX.npy (or .csv when a part was exported
by the older CSV exporter)."""
import argparse
import csv
import datetime
import glob
import os
import time
from collections import defaultdict, deque

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset


class SmoothedValue:
    def __init__(self, window_size=20, fmt="{median:.4f} ({global_avg:.4f})"):
        self.deque, self.total, self.count, self.fmt = deque(maxlen=window_size), 0.0, 0, fmt

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n

    @property
    def median(self):
        return float(np.median(list(self.deque)))

    @property
    def avg(self):
        return float(np.mean(list(self.deque)))

    @property
    def global_avg(self):
        return self.total / self.count

    def __str__(self):
        return self.fmt.format(median=self.median, avg=self.avg, global_avg=self.global_avg)


class MetricLogger:
    def __init__(self, delimiter="  "):
        self.meters, self.delimiter = defaultdict(SmoothedValue), delimiter

    def update(self, **kwargs):
        for k, v in kwargs.items():
            self.meters[k].update(v.item() if torch.is_tensor(v) else v)

    def log_every(self, iterable, print_freq, total, header=""):
        start_time = end = time.time()
        iter_time, data_time = SmoothedValue(fmt="{avg:.4f}"), SmoothedValue(fmt="{avg:.4f}")
        space_fmt = ":" + str(len(str(total))) + "d"
        log_msg = self.delimiter.join([header, "[{0" + space_fmt + "}/{1}]", "eta: {eta}", "{meters}",
                                       "time: {time}", "data: {data}"])
        for i, obj in enumerate(iterable):
            data_time.update(time.time() - end)
            yield obj
            iter_time.update(time.time() - end)
            if i % print_freq == 0 or i == total - 1:
                eta = str(datetime.timedelta(seconds=int(iter_time.global_avg * (total - i))))
                meters = self.delimiter.join(f"{k}: {v}" for k, v in self.meters.items())
                print(log_msg.format(i, total, eta=eta, meters=meters, time=str(iter_time), data=str(data_time)))
            end = time.time()
        total_time = str(datetime.timedelta(seconds=int(time.time() - start_time)))
        print(f"{header} Total time: {total_time} ({(time.time() - start_time) / total:.4f} s / it)")


def setup_for_distributed(is_master):
    import builtins as __builtin__

    builtin_print = __builtin__.print

    def print(*args, **kwargs):
        force = kwargs.pop("force", False)
        if is_master or force:
            builtin_print(*args, **kwargs)

    __builtin__.print = print


class Parts(IterableDataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "part-*")))

    def __iter__(self):
        for f in self.files:
            if f.endswith(".npy"):
                arr = np.load(f)
            else:  # parts from the old exporter
                with open(f, newline="") as fh:
                    arr = np.array([[float(v) for v in row] for row in csv.reader(fh)], dtype=np.float32)
            for row in arr:
                yield torch.from_numpy(row[:-1].copy()), int(row[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--print-freq", type=int, default=10)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    setup_for_distributed(rank == 0)
    print(f"| distributed init (rank {rank}): env://", force=True)
    print(args)
    ds = Parts(f"data/rank{rank}")
    loader = DataLoader(ds, batch_size=args.batch_size)
    total = sum(500 for _ in ds.files) // args.batch_size
    model = DDP(nn.Sequential(nn.Linear(1023, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    print("Start training")
    start_time = time.time()
    metric_logger = MetricLogger(delimiter="  ")
    for x, y in metric_logger.log_every(loader, args.print_freq, total, "Epoch: [0]"):
        start = time.time()
        out = model(x)
        loss = crit(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc1 = (out.argmax(1) == y).float().mean() * 100
        metric_logger.update(loss=loss.item(), lr=opt.param_groups[0]["lr"])
        metric_logger.meters["acc1"].update(acc1.item(), n=x.shape[0])
        metric_logger.meters["img/s"].update(x.shape[0] / (time.time() - start))
    print(f"Training time {datetime.timedelta(seconds=int(time.time() - start_time))}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
