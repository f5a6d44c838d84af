"""Benchmark: fail-hang analysis of 10,000 ranks x 8 snapshots built from real lab dumps.

The dumps of tests/fixtures/hang/lock_deadlock (py-spy text and JSON from a real 4-rank torchrun
job) are replicated: every rank gets a healthy rank's stacks except one culprit, which gets the
deadlocked rank's. The analysis runs in a child process so that its peak RSS is its own.
Target (issue: fail-hang localisation): <= 5 s and <= 1 GB peak RSS on the 2-core machine.

    .venv/bin/python eval/bench/bench_hang.py [--ranks 10000] [--snapshots 8] [--format txt|json|both] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "tests" / "fixtures" / "hang" / "lock_deadlock"
OUT = REPO / "eval" / "bench" / "results" / "bench_hang.json"


def build(root: Path, ranks: int, snapshots: int, fmt: str, culprit: int) -> None:
    src_snaps = sorted(p for p in SRC.iterdir() if p.is_dir())
    healthy, bad = 1, 0  # in the fixture, rank 0 is the deadlocked one
    exts = ["txt", "json"] if fmt == "both" else [fmt]
    for i in range(snapshots):
        s = src_snaps[min(i, len(src_snaps) - 1)]
        d = root / f"{i:04d}"
        d.mkdir(parents=True)
        payload = {(who, ext): (s / f"rank-{who}.{ext}").read_bytes() for who in (healthy, bad) for ext in exts}
        for r in range(ranks):
            who = bad if r == culprit else healthy
            for ext in exts:
                (d / f"rank-{r}.{ext}").write_bytes(payload[(who, ext)])
    (root / "ranks.json").write_text(json.dumps({str(r): {"node": f"node{r // 8}", "local_rank": r % 8} for r in range(ranks)}))


def child(path: str) -> None:
    sys.path.insert(0, str(REPO))
    from diag_service.hang import HangRequest, analyze_hang

    t0 = time.perf_counter()
    rep = analyze_hang(HangRequest(dumps_dir=path))
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "rss_mb": rss_mb, "hung": rep.hung,
                      "top": rep.suspects[0].rank if rep.suspects else None}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=10_000)
    ap.add_argument("--snapshots", type=int, default=8)
    ap.add_argument("--format", choices=("txt", "json", "both"), default="txt")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--_child")
    a = ap.parse_args()
    if a._child:
        child(a._child)
        return
    culprit = random.Random(7).randrange(a.ranks)
    tmp = Path(tempfile.mkdtemp(prefix="bench_hang_"))
    try:
        t0 = time.perf_counter()
        build(tmp, a.ranks, a.snapshots, a.format, culprit)
        gen_s = time.perf_counter() - t0
        runs = []
        for _ in range(a.runs):
            out = subprocess.run([sys.executable, __file__, "--_child", str(tmp)], capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        wall = statistics.median(r["wall_s"] for r in runs)
        rss = max(r["rss_mb"] for r in runs)
        res = {
            "benchmark": "bench_hang", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "loadavg": os.getloadavg()},
            "config": {
                "ranks": a.ranks, "snapshots": a.snapshots, "format": a.format, "culprit": culprit,
                "dump_files": a.ranks * a.snapshots * (2 if a.format == "both" else 1),
                "source": str(SRC.relative_to(REPO)),
            },
            "generate_s": round(gen_s, 2), "wall_s_median": round(wall, 3), "wall_s_runs": [round(r["wall_s"], 3) for r in runs],
            "peak_rss_mb": round(rss, 1), "culprit_found": all(r["top"] == culprit and r["hung"] for r in runs),
            "targets": {"wall_s_max": 5.0, "rss_mb_max": 1024, "met": wall <= 5.0 and rss <= 1024},
        }
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps(res, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
