"""Speaker-ID model on DDP, 3 ranks; each rank's DataLoader (one worker process, IterableDataset) reads fixed-size
feature records from the named pipe stream/rank<R>.fifo that the node's feature-streaming sidecar fills. Flight Recorder is on (TORCH_FR_BUFFER_SIZE); a rank writes its trace to fr/ when a collective
fails or when it is terminated (SIGTERM)."""
import datetime
import logging
import os
import signal
import struct
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

REC = struct.Struct("<40fi")


class FifoFeatures(IterableDataset):
    def __init__(self, path, batch):
        self.path, self.batch = path, batch

    def __iter__(self):
        wi = get_worker_info()
        with open(self.path, "rb", buffering=0) as f:
            while True:
                buf = b""
                while len(buf) < self.batch * REC.size:
                    chunk = f.read(self.batch * REC.size - len(buf))
                    if not chunk:
                        return
                    buf += chunk
                rows = [REC.unpack_from(buf, i * REC.size) for i in range(self.batch)]
                yield torch.tensor([r[:40] for r in rows]), torch.tensor([r[40] for r in rows]), wi.id


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    log = logging.getLogger(f"spkid.rank{rank}")
    torch.set_num_threads(1)
    torch.manual_seed(0)

    def dump_fr(why):
        os.makedirs("fr", exist_ok=True)
        with open(f"fr/trace_rank_{rank}", "wb") as f:
            f.write(torch._C._distributed_c10d._dump_fr_trace())
        log.error("%s: flight recorder trace written to fr/trace_rank_%d", why, rank)

    def on_term(signum, frame):
        dump_fr("SIGTERM")
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_term)
    dl = DataLoader(FifoFeatures(f"stream/rank{rank}.fifo", 64), batch_size=None, num_workers=1)
    log.info("DataLoader on stream/rank%d.fifo with 1 worker", rank)
    model = DDP(nn.Sequential(nn.Linear(40, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 50)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    try:
        for step, (x, y, _) in enumerate(dl, 1):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("step %d/400 loss %.4f", step, loss.item())
            if step == 400:
                break
    except Exception as e:
        dump_fr(type(e).__name__)
        raise
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
