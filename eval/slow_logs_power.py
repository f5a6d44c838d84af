"""Power and false alarms of the whole-log slowdown test (``diag_service.slow.offline``) on real step times.

What a training log prints is the job's step time, every step or averaged over a log interval. The series
here come from the real clean lab runs of ``eval/slow_feeds/`` (torchrun + gloo, 4 and 8 ranks, quiet and
loaded host; its frozen dev/test split): the job's step time is the median over ranks of each step's
duration; a log with interval ``L`` prints the mean of each ``L`` steps. Into a copy, a job-wide slowdown of
``factor`` is injected from a random onset (uniform over the middle 30-70 % of the run) on every step or on
1 step in ``duty``; a draw is *found* when the test reports a stretch starting no earlier than ``L`` steps
before the onset (a block's length of steps when the test averages records into blocks); a stretch found
earlier is a false alarm before onset, counted apart.
False alarms: the clean series as they are, per log (the test's design rate is ``ALPHA`` = 0.001 per log).

    .venv/bin/python eval/slow_logs_power.py            # dev feeds (look freely)
    .venv/bin/python eval/slow_logs_power.py --test     # held-back feeds: false alarms and power, reported

Results: ``eval/results/slow_logs_power_{dev,test}.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from slow_power import load_feed, load_split  # noqa: E402

from diag_service.slow.offline import TARGET_BLOCKS, find_shift  # noqa: E402

FACTORS = (1.1, 1.2, 1.3, 1.5, 2.0)
DUTIES = (1, 5)
INTERVALS = (1, 10, 50)
MIN_EFFECT = 0.3


def job_series(name: str) -> np.ndarray:
    """The job's step time per step (median over ranks of end - start), seconds, in step order."""
    by_step: dict[int, list[float]] = defaultdict(list)
    for r in load_feed(name):
        by_step[int(r["step"])].append(float(r["end"]) - float(r["start"]))
    return np.array([statistics.median(by_step[s]) for s in sorted(by_step)])


def as_log(t: np.ndarray, interval: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What a log with ``interval`` prints: (last step of each interval, mean step time, steps covered)."""
    n = t.size // interval * interval
    means = t[:n].reshape(-1, interval).mean(axis=1)
    steps = np.arange(interval, n + 1, interval)
    return steps, means, np.full(means.size, float(interval))


def trial(t: np.ndarray, factor: float, duty: int, onset: int, interval: int) -> str:
    x = t.copy()
    idx = np.arange(x.size)
    hit = (idx >= onset) & ((idx - onset) % duty == 0)
    x[hit] *= factor
    steps, means, w = as_log(x, interval)
    s = find_shift(steps, means, w, min_effect=MIN_EFFECT)
    if s is None:
        return "missed"
    # the stretch starts at a block's first record: an onset inside a block is placed at that block's start
    slack = math.ceil(steps.size / TARGET_BLOCKS) * interval
    return "found" if s.start_step >= onset - slack else "early"


def evaluate(names: list[str], draws: int, seed: int) -> dict:
    rng = random.Random(seed)
    series = {n: job_series(n) for n in names}
    cells = []
    for interval in INTERVALS:
        for duty in DUTIES:
            for factor in FACTORS:
                out = defaultdict(int)
                for _ in range(draws):
                    name = rng.choice(names)
                    t = series[name]
                    onset = int(t.size * rng.uniform(0.3, 0.7))
                    out[trial(t, factor, duty, onset, interval)] += 1
                cells.append({"interval": interval, "duty": duty, "factor": factor, "draws": draws,
                              "p_found": round(out["found"] / draws, 3), "early": out["early"]})
    fa = {}
    for interval in INTERVALS:
        hits = [n for n, t in series.items() if find_shift(*as_log(t, interval), min_effect=MIN_EFFECT) is not None]
        fa[str(interval)] = {"logs": len(series), "false_alarms": len(hits), "which": hits}
    return {"feeds": len(names), "steps": int(sum(t.size for t in series.values())), "cells": cells,
            "false_alarms": fa}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", action="store_true", help="the held-back feeds instead of dev")
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    split = "test" if args.test else "dev"
    res = evaluate(load_split()[split], args.draws, args.seed)
    res["split"] = split
    out = ROOT / "eval" / "results" / f"slow_logs_power_{split}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{split}: {res['feeds']} clean runs, {res['steps']} steps")
    print("interval duty  " + "  ".join(f"x{f:<4}" for f in FACTORS))
    for interval in INTERVALS:
        for duty in DUTIES:
            row = [c for c in res["cells"] if c["interval"] == interval and c["duty"] == duty]
            print(f"{interval:>8} 1/{duty:<3} " + "  ".join(f"{c['p_found']:.2f} " for c in row)
                  + f"  early {sum(c['early'] for c in row)}")
    for k, v in res["false_alarms"].items():
        print(f"false alarms, interval {k}: {v['false_alarms']} of {v['logs']} clean logs {v['which']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
