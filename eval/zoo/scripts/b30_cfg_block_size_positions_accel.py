"""Continued pre-training of a small GPT-2 on the support-chat corpus with accelerate; the model comes from
configs/model.json, the packing length from --block-size."""
import argparse
import json

import numpy as np
import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-config", default="configs/model.json")
    ap.add_argument("--block-size", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    acc = Accelerator(cpu=True)
    cfg = GPT2Config(**json.load(open(args.model_config)))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    acc.print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
              f"block size {args.block_size}, {acc.num_processes} processes")
    tokens = np.load("data/chat_tokens.npy", mmap_mode="r")
    n_blocks = len(tokens) // args.block_size
    blocks = torch.from_numpy(np.asarray(tokens[: n_blocks * args.block_size], dtype=np.int64)).view(n_blocks, -1)
    loader = torch.utils.data.DataLoader(blocks, batch_size=args.batch_size, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model, opt, loader = acc.prepare(model, opt, loader)
    bar = tqdm(total=args.steps, disable=not acc.is_main_process)
    step = 0
    while step < args.steps:
        for ids in loader:
            out = model(input_ids=ids, labels=ids)
            acc.backward(out.loss)
            opt.step()
            opt.zero_grad()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{out.loss.item():.3f}")
            if step >= args.steps:
                break
    acc.print("done")


if __name__ == "__main__":
    main()
