"""Headline summariser (a small GPT-2 trained from scratch) with accelerate on two machines, one process each;
every 100 steps the main process writes a few sample generations to the log."""
import logging

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger("headlines")


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=5000, n_positions=64, n_embd=96, n_layer=2, n_head=4,
                                       bos_token_id=0, eos_token_id=1, pad_token_id=1))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    log.info("process %d of %d ready", acc.process_index, acc.num_processes, main_process_only=False)
    for step in range(1, 501):
        ids = torch.randint(2, 5000, (16, 48), generator=g)
        loss = model(input_ids=ids, labels=ids).loss
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 20 == 0:
            log.info("process %d step %d loss %.4f", acc.process_index, step, loss.item(), main_process_only=False)
        if step % 100 == 0 and acc.is_main_process:
            model.eval()
            with torch.no_grad():
                out = model.generate(torch.zeros(2, 1, dtype=torch.long), max_new_tokens=12, do_sample=False)
            log.info("samples at step %d: %s", step, out.tolist())
            model.train()


if __name__ == "__main__":
    main()
