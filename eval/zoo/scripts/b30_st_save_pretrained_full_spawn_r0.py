"""Fine-tuning a small BERT for query classification, DDP over gloo under torch.multiprocessing.spawn; every 25
steps process 0 writes the model with save_pretrained into checkpoints/step-N (safetensors)."""
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from transformers import BertConfig, BertForSequenceClassification


def run(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("qcls")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=12000, hidden_size=192, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=768, max_position_embeddings=128, num_labels=12)
    model = torch.nn.parallel.DistributedDataParallel(BertForSequenceClassification(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 1001):
        ids = torch.randint(1, 12000, (8, 32), generator=g)
        out = model(input_ids=ids, labels=ids[:, 0] % 12)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, out.loss.item())
        if step % 25 == 0 and rank == 0:
            path = f"checkpoints/step-{step}"
            model.module.save_pretrained(path)
            log.info("saved %s", path)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.makedirs("checkpoints", exist_ok=True)
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
