"""Audio-tagging fine-tune (mel patches -> 50 tags), DDP over gloo. Each worker serves Prometheus-style metrics
on METRICS_PORT_BASE + LOCAL_RANK so that the node's scraper can watch loss and throughput per worker."""
import os
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

METRICS = {"train_loss": 0.0, "train_step": 0, "samples_per_sec": 0.0}


class MetricsHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = "".join(f"tagger_{k} {v}\n" for k, v in METRICS.items()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def start_metrics_server(port):
    srv = HTTPServer(("0.0.0.0", port), MetricsHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    port = int(os.environ.get("METRICS_PORT_BASE", "9400")) + local_rank
    start_metrics_server(port)
    print(f"rank {rank}: metrics on :{port}/metrics", flush=True)
    model = DDP(nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(64, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        x = torch.randn(32, 1, 64, 48, generator=g)
        y = (torch.rand(32, 50, generator=g) < 0.05).float()
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        METRICS.update(train_loss=loss.item(), train_step=step)
        if step % 25 == 0:
            METRICS["samples_per_sec"] = 25 * 32 / (time.time() - t0)
            print(f"rank {rank}: step {step}/200 loss {loss.item():.4f} {METRICS['samples_per_sec']:.0f} samples/s",
                  flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
