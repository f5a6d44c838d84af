"""Signal-to-noise of one rank's compute slowdown in three statistics the rank test could use (issue 18).

For ``--trials`` draws of (quiet dev feed of ``eval/slow_feeds``, target rank, onset in
``slow_power.ONSET``), one rank's compute x ``--factor`` is injected (:func:`slow_power.inject`: the
others wait, the step grows) and, for the target rank, three per-step statistics are formed:

* ``q``: its compute excess over the median of all ranks, in units of the job's step time (what
  :class:`~diag_service.slow.rank.PeerTracker` uses);
* ``log_ratio``: log of its compute over the median of all ranks (itself included);
* ``loo_log_ratio``: log of its compute over the median of the *other* ranks (leave-one-out).

The SNR of a trial is (mean over the first 20 steps after the onset - median before it) / (robust
sigma before it, 1.4826 x MAD, from step 25 on). Reported: the median SNR per world size.

    .venv/bin/python eval/slow_rank_snr.py [--trials 40] [--factor 1.3] [--out eval/results/slow_rank_snr.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_power  # noqa: E402 - the feeds, split and injection of the power evaluation

REPO = Path(__file__).resolve().parents[1]
STATS = ("q", "log_ratio", "loo_log_ratio")


def trial_snr(records: list[dict], target: int, onset: int, factor: float, window: int = 20) -> dict[str, float]:
    """The SNR of each statistic (see the module docstring) for one injected trial."""
    by: dict[int, dict[int, dict]] = defaultdict(dict)
    for r in slow_power.inject(records, "rank_compute", factor, 1, onset, target):
        by[int(r["step"])][int(r["rank"])] = r
    ranks = sorted({int(r["rank"]) for r in records})
    steps = [s for s in sorted(by) if len(by[s]) == len(ranks)]
    c = np.array([[by[s][k]["compute_s"] for k in ranks] for s in steps])
    t = np.array([statistics.median(by[s][k]["end"] - by[s][k]["start"] for k in ranks) for s in steps])
    st = np.array(steps)
    i = ranks.index(target)
    med = np.median(c, axis=1)
    series = {"q": (c[:, i] - med) / t, "log_ratio": np.log(c[:, i] / med),
              "loo_log_ratio": np.log(c[:, i] / np.median(np.delete(c, i, axis=1), axis=1))}
    pre = (st >= 25) & (st < onset)
    post = (st >= onset) & (st < onset + window)
    out = {}
    for name, x in series.items():
        m = float(np.median(x[pre]))
        sig = 1.4826 * float(np.median(np.abs(x[pre] - m)))
        out[name] = (float(np.mean(x[post])) - m) / sig
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--factor", type=float, default=1.3)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "results" / "slow_rank_snr.json")
    a = ap.parse_args(argv)
    names = [n for n in slow_power.load_split()["dev"] if n.startswith("quiet-")]
    rng = random.Random(a.seed)
    per_world: dict[int, list[dict[str, float]]] = defaultdict(list)
    for _ in range(a.trials):
        name = rng.choice(names)
        recs = slow_power.load_feed(name)
        ranks = sorted({int(r["rank"]) for r in recs})
        target, onset = rng.choice(ranks), rng.randint(*slow_power.ONSET)
        per_world[len(ranks)].append(trial_snr(recs, target, onset, a.factor))
    res = {"factor": a.factor, "trials": a.trials, "seed": a.seed, "split": "dev (quiet feeds)",
           "median_snr": {str(w): {s: round(statistics.median(r[s] for r in rows), 3) for s in STATS} | {"trials": len(rows)}
                          for w, rows in sorted(per_world.items())}}
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    for w, row in res["median_snr"].items():
        print(f"{w} ranks ({row['trials']} trials): " + ", ".join(f"{s} {row[s]}" for s in STATS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
