"""Benchmark of the streaming fail-slow detector: per-step ``update`` time and memory at 10,000 ranks.

Feeds a synthetic synchronous job (``diag_service.slow.synth``: 10,000 ranks, 8 per node, log-normal
jitter, warm-up, a compute straggler from step ``--onset``; by default each record also carries a
collective trace's ``comm_wait_s``, the more expensive path, ``--comm-model sync`` leaves it out) step by step into
``SlowDetector.update`` and measures, per step, the wall time of the call only (generation excluded):

* ``columnar``: each step as one ``StepBatch`` (numpy columns, the collector-side fast path);
* ``records``: each step as 10,000 lab-format dicts (``{"rank", "node", "step", ...}``), i.e. including
  the conversion a Python caller pays.

Both wall time and the calling thread's CPU time are reported (the host is shared). Memory:
``tracemalloc`` retained size of the detector at several steps, in a separate pass; bounded state means it
does not grow with the number of steps. Also checks that the straggler was found.
Writes JSON to ``eval/bench/results/bench_slow.json``.

Usage: ``.venv/bin/python eval/bench/bench_slow.py [--ranks 10000] [--steps 300] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from diag_service.slow import SlowDetector
from diag_service.slow.synth import Fault, SynthConfig, iter_steps, to_records

TARGET_MS = 20.0


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"steps": int(a.size), "median_ms": round(float(np.median(a)), 3), "p95_ms": round(float(np.percentile(a, 95)), 3),
            "p99_ms": round(float(np.percentile(a, 99)), 3), "max_ms": round(float(a.max()), 3),
            "mean_ms": round(float(a.mean()), 3)}


COMM_MODEL = "traced"


def _config(ranks: int, steps: int, onset: int, seed: int) -> SynthConfig:
    return SynthConfig(ranks=ranks, ranks_per_node=8, steps=steps, seed=seed, comm_model=COMM_MODEL,  # type: ignore[arg-type]
                       faults=[Fault("compute", onset, 1.5, (ranks // 3,))])


def run(ranks: int, steps: int, onset: int, mode: str, seed: int) -> dict[str, object]:
    """Stream ``steps`` steps of ``ranks`` ranks through a fresh detector; time every ``update`` call.

    Wall time and this thread's CPU time (``time.thread_time``) are both recorded: on a shared host the
    wall time includes waiting for a CPU. The first 30 steps (warm-up and baseline window, including the
    one-off baseline computation) are reported separately from the steady state.
    """
    det = SlowDetector()
    wall: list[float] = []
    cpu: list[float] = []
    gc.collect()
    for b in iter_steps(_config(ranks, steps, onset, seed)):
        payload = to_records(b) if mode == "records" else b
        t, c = time.perf_counter(), time.thread_time()
        det.update(payload)
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
        del payload
    t = time.perf_counter()
    rep = det.report()
    report_ms = (time.perf_counter() - t) * 1000
    found = [s.rank for s in rep.stragglers]
    return {
        "mode": mode, "ranks": ranks,
        "wall_steady": _stats(wall[30:]), "cpu_steady": _stats(cpu[30:]),
        "wall_first_30": _stats(wall[:30]), "cpu_first_30": _stats(cpu[:30]),
        "slowest_steps_wall": sorted(((round(x, 2), i) for i, x in enumerate(wall)), reverse=True)[:3],
        "report_ms": round(report_ms, 2),
        "straggler_expected": ranks // 3, "stragglers_found": found[:10], "detected": (ranks // 3) in found,
        "pass_median_wall": bool(np.median(wall[30:]) <= TARGET_MS),
        "pass_median_cpu": bool(np.median(cpu[30:]) <= TARGET_MS),
    }


def memory(ranks: int, steps: int, onset: int, seed: int) -> dict[str, object]:
    """Retained size of the detector (tracemalloc, in a separate pass: tracing slows allocation) over time."""
    gens = iter_steps(_config(ranks, steps, onset, seed))
    first = next(gens)
    tracemalloc.start()
    det = SlowDetector()
    det.update(first)
    marks = {}
    for i, b in enumerate(gens, 1):
        det.update(b)
        if i in (10, 40, 100, 200, steps - 1):
            gc.collect()
            marks[i] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"ranks": ranks, "steps": steps, "retained_mb_after_step": marks, "peak_mb": round(peak / 2**20, 2),
            "pending_steps_at_end": len(det.pending), "alarms_kept": len(det.alarms)}


def main(argv: list[str] | None = None) -> int:
    """Run both modes and write the JSON result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--record-steps", type=int, default=120, help="Steps for the (slower to generate) dict mode.")
    ap.add_argument("--onset", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--comm-model", choices=("traced", "sync"), default="traced",
                    help="traced: records carry comm_wait_s (a collective trace); sync: phases only.")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_slow.json")
    a = ap.parse_args(argv)
    if min(a.steps, a.record_steps) <= a.onset + 10:
        ap.error(f"--steps and --record-steps must exceed --onset ({a.onset}) by more than 10, or no straggler can be "
                 "found after the onset")
    global COMM_MODEL
    COMM_MODEL = a.comm_model
    res = {
        "benchmark": "slow_streaming_update",
        "target_ms_per_step": TARGET_MS,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
                    "loadavg_at_start": list(os.getloadavg())},
        "numpy": np.__version__,
        "comm_model": a.comm_model,
        "runs": [run(a.ranks, a.steps, a.onset, "columnar", a.seed),
                 run(a.ranks, a.record_steps, a.onset, "records", a.seed)],
        "memory": memory(a.ranks, a.steps, a.onset, a.seed),
    }
    res["machine"]["loadavg_at_end"] = list(os.getloadavg())
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    sys.stdout.write(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
