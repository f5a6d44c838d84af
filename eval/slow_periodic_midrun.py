"""A periodic stall that starts mid-run, replayed on real clean feeds (trial 12's r09; docs/slow.md, Power curves).

Six dev feeds of ``eval/slow_feeds`` (the first six of the split's ``dev``), each with ``eval/slow_power.py``'s
injection from a third of the run on: job-wide (every rank's step x factor) and one rank's compute (rank 1), on one
step in 5 (x2.85), 3 (x2.1) and 2 (x1.74), each a mean of about 1.37x the step's own pace over the steps after the
onset. Prints, per feed and cell, the job episodes (start, end, detected at, factor, intermittent), the stragglers
(rank, phase, detected at, factor on its slow steps, intermittent) and the periodic phases the job detector excluded.

    .venv/bin/python eval/slow_periodic_midrun.py      # ~1 min on 2 cores; dev feeds only
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import slow_power as sp  # noqa: E402

CELLS = ((5, 2.85), (3, 2.1), (2, 1.74))


def main() -> None:
    names = sp.load_split()["dev"][:6]
    for kind in ("job_compute", "rank_compute"):
        for duty, factor in CELLS:
            for name in names:
                recs = sp.load_feed(name)
                steps = sorted({int(r["step"]) for r in recs})
                onset = steps[len(steps) // 3]
                rep = sp.run_detector(sp.inject(recs, kind, factor, duty, onset, target=1))
                eps = [(e.start_step, e.end_step, e.detected_at_step, round(e.slowdown_factor, 2), e.intermittent)
                       for e in rep.job_slowdown]
                strag = [(s.rank, s.kind.value, s.detected_at_step, round(s.slowdown_factor, 2), s.intermittent)
                         for s in rep.stragglers]
                periodic = rep.baseline.periodic if rep.baseline else []
                print(kind, f"1 in {duty} x{factor}", name, "onset", onset, "job", eps, "stragglers", strag[:3],
                      "periodic", periodic)


if __name__ == "__main__":
    main()
