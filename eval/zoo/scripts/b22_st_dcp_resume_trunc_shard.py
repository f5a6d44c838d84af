"""Fine-tunes a speech-emotion classifier (conv front end + transformer encoder) from the pre-trained checkpoint the
research cluster exported as a torch.distributed.checkpoint directory, DDP over gloo, 3 processes; logging with
asctime."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s rank{RANK} %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("ser")
INIT = "pretrained/ser-base-dcp"


class SER(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(80, 256, 5, stride=2), nn.GELU(), nn.Conv1d(256, 256, 5, stride=2))
        layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 6)
        self.head = nn.Linear(256, 7)

    def forward(self, x):
        return self.head(self.enc(self.front(x).transpose(1, 2)).mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    model = SER()
    state = {"model": model.state_dict()}
    log.info("loading pre-trained weights from %s", INIT)
    dcp.load(state, checkpoint_id=INIT)
    model.load_state_dict(state["model"])
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 201):
        x, y = torch.randn(8, 80, 200, generator=g), torch.randint(0, 7, (8,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/200 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
