#!/usr/bin/env python3
"""What the node agent costs the training job (issue 22: at most 1 % of the step time).

Runs the lab's clean control scenario (real torchrun/gloo jobs) in pairs, one without and one with
``--watch`` (a local ``diag serve`` and one ``diag watch`` per simulated node), alternating which goes
first, and compares the median step time (``end - start`` of the ranks' ``timing.jsonl`` records of
train steps) of each run. The machine's own drift is in both arms of a pair, so the ratio of a pair
is the measurement; the median over the pairs is reported.

    .venv/bin/python eval/bench/bench_agent_overhead.py [--pairs 3] [--scenario slow_control_clean]

Writes ``eval/bench/results/bench_agent_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _median_step(run: Path) -> float:
    steps = []
    for line in (run / "timing.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kind", "train") == "train" and r.get("end") is not None and r.get("start") is not None:
            steps.append(float(r["end"]) - float(r["start"]))
    return statistics.median(steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--scenario", default="slow_control_clean")
    ap.add_argument("--nodes", type=int, default=2)
    a = ap.parse_args()

    from diag_service.lab.live import LiveService
    from diag_service.lab.runner import run_scenario
    from diag_service.lab.scenarios import resolve_scenario

    sc = resolve_scenario(a.scenario)
    work = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    pairs = []
    with LiveService(work / "service") as live:
        for i in range(a.pairs):
            got = {}
            for arm in (("bare", "watched") if i % 2 == 0 else ("watched", "bare")):
                out = work / f"{i:02d}-{arm}"
                t0 = time.time()
                run_scenario(sc, out, seed=100 + i, nodes=a.nodes, live=live if arm == "watched" else None)
                got[arm] = {"median_step_s": _median_step(out), "wall_s": round(time.time() - t0, 2)}
            got["ratio"] = got["watched"]["median_step_s"] / got["bare"]["median_step_s"]
            pairs.append(got)
            print(json.dumps(got))
    res = {
        "scenario": a.scenario, "nodes": a.nodes, "pairs": pairs,
        "median_ratio": statistics.median(p["ratio"] for p in pairs),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
        "note": "ratio = median step time with the agents / without, same pair; 1.01 is the issue's bound",
    }
    out = ROOT / "eval" / "bench" / "results" / "bench_agent_overhead.json"
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "pairs"}, indent=2))


if __name__ == "__main__":
    main()
