"""Log-form straggler test (every rank's step time + data wait, as step lines give them) on real clean lab feeds:
false alarms on the clean feeds, and power for one rank whose data wait grows by `extra` x the job's median step time
from a random onset (every rank's step time grows by the same amount: the others wait). Split: eval/slow_feeds.

Usage: .venv/bin/python eval/slow_logs_rank_power.py SPLIT EXTRA DRAWS   (SPLIT dev|test
one JSON line on stdout)
Results of session 6: eval/results/slow_logs_rank_power.jsonl (test feeds looked at for this, counted there).
"""
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from diag_service.slow.analyze import analyze_slow  # noqa: E402
from diag_service.slow.feeds import StepBatch, load_jsonl  # noqa: E402

split = json.loads((Path(__file__).resolve().parent / 'slow_feeds' / 'split.json').read_text())
which, extra, draws = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(11)
names = split[which]
def logform(b, t):
    ok = np.isfinite(t) & np.isfinite(b.data)
    return StepBatch.from_columns(step=b.step[ok], rank=b.rank[ok], step_time=t[ok], data=b.data[ok])
fa = steps = 0
feeds = {}
for n in names:
    b = load_jsonl(Path(__file__).resolve().parent / 'slow_feeds' / f'{n}.jsonl.gz').batch
    t = b.end - b.start
    feeds[n] = (b, t)
    rep = analyze_slow(logform(b, t))
    fa += len(rep.stragglers)
    steps += len(set(b.step.tolist()))
res = {"split": which, "feeds": len(names), "clean_steps": int(steps), "false_stragglers": fa}
hit20 = hit60 = named = wrong = 0
delays = []
for _ in range(draws):
    n = rnd.choice(names)
    b, t = feeds[n]
    ranks = sorted(set(b.rank.tolist()))
    r = rnd.choice(ranks)
    steps_sorted = np.unique(b.step)
    onset = int(steps_sorted[int(len(steps_sorted) * rnd.uniform(0.3, 0.7))])
    add = extra * float(np.nanmedian(t))
    d = b.data.copy()
    tt = t.copy()
    after = b.step >= onset
    d[after & (b.rank == r)] += add
    tt[after] += add
    rep = analyze_slow(logform(StepBatch.from_columns(step=b.step, rank=b.rank, start=b.start, end=b.end, data=d), tt))
    s = [x for x in rep.stragglers if x.rank == r]
    wrong += sum(1 for x in rep.stragglers if x.rank != r)
    if s:
        named += 1
        delay = s[0].detected_at_step - onset
        delays.append(delay)
        hit20 += delay <= 20
        hit60 += delay <= 60
res.update({"extra_x_step": extra, "draws": draws, "named": named, "within_20": hit20, "within_60": hit60,
            "median_delay": float(np.median(delays)) if delays else None,
            "wrong_rank_named": wrong})
print(json.dumps(res))
