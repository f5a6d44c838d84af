"""How much a job-level slowdown test can see on this host's clean feeds: an oracle bound (issue 18).

For each quiet clean lab feed of ``eval/slow_feeds`` (the dev split by default), the job's step time
``T`` per step (the median over ranks of ``end - start``, as :class:`~diag_service.slow.SlowDetector`
uses) after the first 25 steps, in log units about the feed's own median (the *oracle* baseline: the
true clean pace, which no online detector knows). For each window length ``w``:

* ``clean_max``: the largest ``w``-step mean over all clean windows of all feeds, i.e. the threshold a
  window-mean test must exceed to raise no alarm on these runs (about one alarm per ``n_windows``
  steps, a looser false-alarm budget than issue 18's 1 per 10,000);
* ``p_over[f]``: the share of clean windows that a sustained slowdown of ``f`` (``log f`` added to
  every step) lifts above ``clean_max``: the detection probability of that oracle test for a slowdown
  that has lasted ``w`` steps.

The same for one rank against its peers (``rank_bound``): each rank's log compute time minus the
step's median over ranks, about that rank's own median (the oracle's standing offset), in ``w``-step
windows; ``p_over[f]`` is then the share of clean windows that one rank's compute x ``f`` lifts above
the largest clean window of any rank.

A detector working online from step time alone, with an estimated baseline and a stricter budget,
cannot do better than this bound on the same noise. The synthetic 1 %/3 % grids of
``eval/slow_power.py`` are not bounded here (their noise is i.i.d. by construction).

    .venv/bin/python eval/slow_oracle_bound.py [--split dev] [--out eval/results/slow_oracle_bound.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_power  # noqa: E402 - the feeds and split of the power evaluation

REPO = Path(__file__).resolve().parents[1]
SKIP = 25  # steps: the detector's warm-up (5) and baseline window (20)
WINDOWS = (10, 20, 30, 50)
FACTORS = (1.1, 1.2, 1.3, 1.5)


def job_log_steps(records: list[dict]) -> np.ndarray:
    """Log job step time per step (median over ranks of end - start), about its own median, from SKIP on."""
    by: dict[int, list[float]] = defaultdict(list)
    for r in records:
        by[int(r["step"])].append(float(r["end"]) - float(r["start"]))
    y = np.log([statistics.median(by[s]) for s in sorted(by)])[SKIP:]
    return y - float(np.median(y))


def bound(names: list[str]) -> dict:
    """The oracle table for the given feeds (see the module docstring)."""
    ys = [job_log_steps(slow_power.load_feed(n)) for n in names]
    rows = []
    for w in WINDOWS:
        wm = np.concatenate([np.convolve(y, np.ones(w) / w, "valid") for y in ys if y.size >= w])
        thr = float(wm.max())
        rows.append({"window": w, "n_windows": int(wm.size), "clean_max_log": round(thr, 4),
                     "clean_max_ratio": round(math.exp(thr), 3),
                     "p_over": {str(f): round(float((wm + math.log(f) > thr).mean()), 3) for f in FACTORS}})
    return {"feeds": names, "steps": int(sum(y.size for y in ys)), "rows": rows}


def rank_bound(names: list[str]) -> dict:
    """The oracle table of one rank's compute against its peers (see the module docstring)."""
    per_w: dict[int, list[np.ndarray]] = {w: [] for w in WINDOWS}
    steps = 0
    for n in names:
        by: dict[int, dict[int, float]] = defaultdict(dict)
        for r in slow_power.load_feed(n):
            by[int(r["step"])][int(r["rank"])] = float(r["compute_s"])
        keep = sorted(by)[SKIP:]
        ranks = sorted(by[keep[0]])
        c = np.log(np.array([[by[s][r] for r in ranks] for s in keep if len(by[s]) == len(ranks)]))
        d = c - np.median(c, axis=1, keepdims=True)
        d = d - np.median(d, axis=0)
        steps += d.shape[0] * d.shape[1]
        for w in WINDOWS:
            per_w[w].extend(np.convolve(d[:, i], np.ones(w) / w, "valid") for i in range(d.shape[1]) if d.shape[0] >= w)
    rows = []
    for w in WINDOWS:
        wm = np.concatenate(per_w[w])
        thr = float(wm.max())
        rows.append({"window": w, "n_windows": int(wm.size), "clean_max_log": round(thr, 4),
                     "clean_max_ratio": round(math.exp(thr), 3),
                     "p_over": {str(f): round(float((wm + math.log(f) > thr).mean()), 3) for f in FACTORS}})
    return {"rank_steps": steps, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "results" / "slow_oracle_bound.json")
    a = ap.parse_args(argv)
    names = [n for n in slow_power.load_split()[a.split] if n.startswith("quiet-")]
    res = {"split": a.split, **bound(names), "rank": rank_bound(names)}
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{a.split}: {len(names)} quiet feeds, {res['steps']} steps after the first {SKIP}")
    print("| window | clean max | " + " | ".join(f"P(x{f} above)" for f in FACTORS) + " |")
    for r in res["rows"]:
        print(f"| {r['window']} | {r['clean_max_ratio']}x | " + " | ".join(str(r["p_over"][str(f)]) for f in FACTORS) + " |")
    print(f"one rank's compute against its peers ({res['rank']['rank_steps']} rank-steps)")
    for r in res["rank"]["rows"]:
        print(f"| {r['window']} | {r['clean_max_ratio']}x | " + " | ".join(str(r["p_over"][str(f)]) for f in FACTORS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
