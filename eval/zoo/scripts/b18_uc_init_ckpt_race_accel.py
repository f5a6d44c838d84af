"""Fine-tune a text-classification head on top of last quarter's encoder with accelerate, 2 processes.
The encoder weights are converted from the legacy export once (by the main process) and then loaded by everyone.
Logs are JSON lines for the cluster's log pipeline."""
import json
import logging
import os
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs


class JsonFormatter(logging.Formatter):
    def format(self, record):
        return json.dumps({"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
                           "process": int(os.environ.get("RANK", 0)), "msg": record.getMessage()})


h = logging.StreamHandler()
h.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("finetune")
LEGACY, CONVERTED = "legacy/encoder_2026q3.npz", "cache/encoder_2026q3.pt"


def encoder():
    return nn.Sequential(nn.Embedding(30000, 256), nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))


def convert_legacy():
    import numpy as np
    arrs = np.load(LEGACY)
    # the legacy export stored Linear weights as (in, out)
    sd = {k.replace("__", "."): torch.from_numpy(arrs[k].T.copy() if k.endswith("weight") and not k.startswith("0")
                                                 else arrs[k]) for k in arrs.files}
    os.makedirs("cache", exist_ok=True)
    torch.save(sd, CONVERTED)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    log.info(f"process {acc.process_index}/{acc.num_processes} started")
    if acc.is_main_process and not os.path.exists(CONVERTED):
        log.info(f"converting {LEGACY}")
        convert_legacy()
    state = torch.load(CONVERTED, map_location="cpu")
    enc = encoder()
    enc.load_state_dict(state)
    log.info(f"encoder loaded from {CONVERTED}")
    model = nn.Sequential(enc, nn.Linear(256, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model, opt = acc.prepare(model, opt)
    for step in range(1, 201):
        ids = torch.randint(0, 30000, (32,))
        loss = nn.functional.cross_entropy(model(ids), ids % 5)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/200 loss {loss.item():.4f}")
    log.info("done")


if __name__ == "__main__":
    main()
