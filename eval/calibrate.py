"""Fit ``knowledge_base/calibration.yaml`` on the development split of the public corpus (never test).

Runs every dev case through the pipeline without calibration, then fits isotonic regression
(pool-adjacent-violators) of "category right" on the raw confidence for named categories, and the
smoothed share of right answers among ``unknown`` diagnoses. Bins with fewer than ``--min-bin`` cases
are pooled with their neighbour so that no step rests on a handful of cases.

    .venv/bin/python eval/calibrate.py [--min-bin 8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "eval"))

import yaml  # noqa: E402
from corpus_eval import CORPUS, _commit, assign, diagnose_case, load_labels  # noqa: E402


def pav(points: list[tuple[float, int]], min_bin: int) -> list[tuple[float, float]]:
    """Isotonic step fit of 0/1 outcomes on scores: ``[(upper score, mean outcome)]``, non-decreasing,
    each step holding at least ``min_bin`` points (Laplace-smoothed means)."""
    pts = sorted(points)
    blocks: list[list[float]] = []  # [sum, count, upper]
    for x, y in pts:
        blocks.append([float(y), 1.0, x])
        while len(blocks) > 1 and (blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]
                                   or blocks[-2][1] < min_bin):
            s, n, up = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
            blocks[-1][2] = up
    if len(blocks) > 1 and blocks[-1][1] < min_bin:
        s, n, up = blocks.pop()
        blocks[-1][0] += s
        blocks[-1][1] += n
        blocks[-1][2] = up
    out = [(round(b[2], 3), round((b[0] + 1) / (b[1] + 2), 3)) for b in blocks]
    out[-1] = (1.0, out[-1][1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-bin", type=int, default=8)
    ap.add_argument("--out", default=str(REPO / "knowledge_base" / "calibration.yaml"))
    a = ap.parse_args()
    labels = load_labels(CORPUS)
    split = assign(labels)
    dev = [c for c in labels if split[c["id"]] == "dev"]
    named: list[tuple[float, int]] = []
    unk_right = unk_n = 0
    for c in dev:
        g = diagnose_case(c, raw=True)
        if "error" in g:
            continue
        right = int(g["category"] == c["category"])
        if g["category"] == "unknown":
            unk_n += 1
            unk_right += right
        else:
            named.append((g["confidence"], right))
    knots = pav(named, a.min_bin)
    doc = {
        "fitted_on": f"eval/corpus dev split, {len(named)} named + {unk_n} unknown diagnoses, commit {_commit()[:12]}",
        "knots": [list(k) for k in knots],
        "unknown": round((unk_right + 1) / (unk_n + 2), 3),
    }
    Path(a.out).write_text("# Fitted by eval/calibrate.py on the public corpus's dev split (never test); see "
                           "diag_service/calibrate.\n" + yaml.safe_dump(doc, sort_keys=False))
    print(yaml.safe_dump(doc, sort_keys=False))


if __name__ == "__main__":
    main()
