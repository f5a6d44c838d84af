"""Char-level LSTM LM, 3 ranks: the byte-pair vocabulary is learned on the first batch (a slow first step), the
learning rate warms up over 150 steps; rank 0 logs tokens/s every 20 steps."""
import collections
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS, WARMUP, LOG_EVERY, BATCH, SEQ = 900, 150, 20, 16, 48
logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
log = logging.getLogger("lm")


class Tokenizer:
    def __init__(self, merges=100):
        self.merges, self.vocab = merges, None

    def learn(self, texts):
        words = collections.Counter(w for t in texts for w in t.split())
        seqs = {w: list(w) for w in words}
        vocab = {c for w in words for c in w}
        for _ in range(self.merges):
            pairs = collections.Counter()
            for w, s in seqs.items():
                for a, b in zip(s, s[1:]):
                    pairs[a, b] += words[w]
            if not pairs:
                break
            (a, b), _ = pairs.most_common(1)[0]
            vocab.add(a + b)
            for w, s in seqs.items():
                i, out = 0, []
                while i < len(s):
                    if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(s[i])
                        i += 1
                seqs[w] = out
        self.vocab = {t: i for i, t in enumerate(sorted(vocab))}


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.ModuleDict({"emb": nn.Embedding(512, 64), "rnn": nn.LSTM(64, 128, batch_first=True),
                           "out": nn.Linear(128, 512)})
    for p in model.parameters():  # same start on every rank; gradients are averaged by hand below
        dist.broadcast(p.data, 0)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    tok = Tokenizer()
    g = torch.Generator().manual_seed(rank)
    syll = ["ka", "ra", "to", "mi", "ne", "so", "lu", "pe", "di", "go", "an", "el"]
    t = time.time()
    for step in range(1, STEPS + 1):
        if tok.vocab is None:
            texts = [" ".join("".join(syll[j] for j in torch.randint(0, 12, (3,), generator=g)) for _ in range(60))
                     for _ in range(80)]
            tok.learn(texts)
            if rank == 0:
                log.info("learned %d-token vocabulary from the first batch", len(tok.vocab))
        lr = 2e-3 * min(1.0, step / WARMUP)
        for grp in opt.param_groups:
            grp["lr"] = lr
        x = torch.randint(0, 512, (BATCH, SEQ + 1), generator=g)
        h, _ = model["rnn"](model["emb"](x[:, :-1]))
        loss = nn.functional.cross_entropy(model["out"](h).reshape(-1, 512), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        opt.step()
        if step % LOG_EVERY == 0 and rank == 0:
            dt = time.time() - t
            log.info("step %d/%d | lr %.2e | loss %.4f | %d tokens/s", step, STEPS, lr, loss.item(),
                     int(LOG_EVERY * BATCH * SEQ * dist.get_world_size() / dt))
            t = time.time()
    dist.barrier()
    if rank == 0:
        log.info("training finished: %d steps", STEPS)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
