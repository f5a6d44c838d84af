"""Tiny GPT-2 trained from scratch in a plain loop (DDP), `save_pretrained` every 250 iterations by rank 0 (archived as .tar.gz for the upload job); every
rank appends its iteration times to logs/timing.jsonl (the save lands in its iteration's record)."""
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel

ITERS, SAVE_EVERY, LOG_EVERY = 750, 250, 25


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=2000, n_positions=64, n_embd=96, n_layer=2, n_head=4)
    model = DDP(GPT2LMHeadModel(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("logs", exist_ok=True)
    feed = open("logs/timing.jsonl", "a")
    t = time.time()
    for it in range(1, ITERS + 1):
        t0 = time.time()
        ids = torch.randint(0, 2000, (8, 48), generator=g)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % SAVE_EVERY == 0:
            if rank == 0:
                model.module.save_pretrained(f"out/gpt2-scratch/iter-{it}")
                torch.save(opt.state_dict(), f"out/gpt2-scratch/iter-{it}/optimizer.pt")
                shutil.make_archive(f"out/upload/gpt2-scratch-iter-{it}", "gztar", f"out/gpt2-scratch/iter-{it}")
                print(f"it {it} | saved out/gpt2-scratch/iter-{it} (archived for upload)")
            dist.barrier()
        feed.write(json.dumps({"rank": rank, "step": it, "start": round(t0, 4), "end": round(time.time(), 4)}) + "\n")
        if it % LOG_EVERY == 0 and rank == 0:
            print(f"it {it} | loss {loss.item():.4f} | {(time.time() - t) / LOG_EVERY * 1000:.1f} ms/it")
        if it % LOG_EVERY == 0:
            t = time.time()
    feed.close()
    dist.barrier()
    if rank == 0:
        print(f"finished {ITERS} iterations; last checkpoint out/gpt2-scratch/iter-{ITERS}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
