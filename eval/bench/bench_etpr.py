"""Benchmark: ETPR accounting of 1,000,000 jobs' lifecycle events (target: <= 60 s on the dev machine).

Generates synthetic events (numpy, seeded; marked synthetic) for N jobs: queue, allocation, start-up with a
checkpoint load, first step, throughput samples (10% of jobs run slow for a while), checkpoints with
blocking durations, and for 30% of the jobs a failure (fail-stop or hang, with onset, category, node;
half of them diagnosed) followed by a restart, or a kill. Writes them to Parquet in a temporary folder,
then times ``load_events`` (read + validate + normalise), ``compute_ledger`` and ``build_report``.
Repeats ``--runs`` times and records the best and the median run (the machine's 2 cores are shared with
other sessions, so the best run is the least disturbed one; CPU seconds, load average and a reference sort
per run are recorded to show the contention). Writes ``eval/bench/results/bench_etpr.json``.

    .venv/bin/python eval/bench/bench_etpr.py [--jobs 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from diag_service.etpr.accounting import compute_ledger
from diag_service.etpr.loaders import load_events
from diag_service.etpr.report import build_report

RESULTS = Path(__file__).resolve().parent / "results" / "bench_etpr.json"
CATS = np.array(["gpu_hardware", "network", "storage", "user_code", "gpu_oom", "unknown"])


def synth_events(n_jobs: int, seed: int = 0) -> pl.DataFrame:
    """Synthetic lifecycle events for ``n_jobs`` jobs (about 15 events per job). Times in unix seconds."""
    rng = np.random.default_rng(seed)
    jid = np.arange(n_jobs)
    job = pl.Series("job", [f"job{i:07d}" for i in range(n_jobs)])
    t0 = 1.7e9 + rng.uniform(0, 30 * 86400, n_jobs)
    gpus = rng.choice([8, 16, 64, 256, 1024], n_jobs, p=[0.5, 0.2, 0.15, 0.1, 0.05]).astype(float)
    queue = rng.exponential(600, n_jobs)
    sched = rng.exponential(60, n_jobs)
    init = rng.uniform(60, 600, n_jobs)
    run = rng.uniform(3600, 86400, n_jobs)
    frames: list[dict[str, np.ndarray | pl.Series | float | str | None]] = []

    def add(idx: np.ndarray, event: str, t: np.ndarray, **cols: np.ndarray | float | str) -> None:
        frames.append({"idx": idx, "event": event, "time": t, **cols})

    alloc = t0 + queue
    start = alloc + sched
    first = start + init
    add(jid, "submitted", t0, gpus=gpus)
    add(jid, "allocated", alloc)
    add(jid, "started", start)
    add(jid, "checkpoint_loaded", start + 0.5 * init, duration=0.3 * init)
    add(jid, "first_step", first)
    slow = rng.random(n_jobs) < 0.1
    for k in range(1, 4):
        tp = np.where(slow & (k >= 2), 70.0, 100.0) * rng.uniform(0.97, 1.0, n_jobs)
        add(jid, "progress", first + k * run / 4, step=k * 100.0, throughput=tp, expected_throughput=100.0)
    add(jid[slow], "slow_detected", (first + 1.2 * run / 4)[slow], category="gpu_hardware", node="n-slow")
    add(jid, "checkpoint_saved", first + run / 3, step=150.0, duration=rng.uniform(5, 60, n_jobs))
    add(jid, "checkpoint_saved", first + 2 * run / 3, step=300.0, duration=rng.uniform(5, 60, n_jobs))
    fail = rng.random(n_jobs) < 0.3
    hang = fail & (rng.random(n_jobs) < 0.3)
    fi = jid[fail]
    t_fail = first[fail] + run[fail]
    det = rng.exponential(120, fi.size)
    add(fi, "failure", t_fail, onset_time=t_fail - det, mode=np.where(hang[fail], "fail_hang", "fail_stop"),
        category=CATS[rng.integers(0, CATS.size, fi.size)], node=np.array([f"n{x:04d}" for x in
                                                                            rng.integers(0, 2000, fi.size)]))
    diag = rng.random(fi.size) < 0.5
    t_diag = t_fail + rng.exponential(900, fi.size)
    add(fi[diag], "diagnosed", t_diag[diag])
    t_restart = np.where(diag, t_diag, t_fail) + rng.exponential(300, fi.size)
    add(fi, "restart", t_restart)
    add(fi, "first_step", t_restart + rng.uniform(60, 300, fi.size))
    end = np.where(fail, 0.0, first + run)
    end[fail] = t_restart + 3600.0
    kill = (~fail) & (rng.random(n_jobs) < 0.05)
    add(jid[kill], "killed", end[kill])
    add(jid[~kill], "finished", end[~kill], status="succeeded")

    cols = ["time", "gpus", "step", "throughput", "expected_throughput", "duration", "onset_time"]
    scols = ["mode", "category", "node", "status"]
    out = []
    for f in frames:
        idx = f["idx"]
        n = idx.size  # type: ignore[union-attr]
        d: dict[str, object] = {"job": job.gather(idx), "event": pl.repeat(f["event"], n, eager=True)}
        for c in cols:
            v = f.get(c)
            d[c] = pl.Series(c, np.broadcast_to(v, n).astype(float)) if v is not None else pl.repeat(None, n,
                                                                                                   dtype=pl.Float64,
                                                                                                   eager=True)
        for c in scols:
            v = f.get(c)
            d[c] = pl.Series(c, np.broadcast_to(np.asarray(v, dtype=object), n).astype(str)) if v is not None \
                else pl.repeat(None, n, dtype=pl.String, eager=True)
        out.append(pl.DataFrame(d))
    return pl.concat(out, how="vertical").sample(fraction=1.0, shuffle=True, seed=seed)


def reference_s() -> float:
    """Wall seconds of a fixed reference task (sorting 4 M floats), to show how contended each run was."""
    x = pl.Series(np.random.default_rng(1).random(4_000_000))
    t = time.perf_counter()
    x.sort()
    return time.perf_counter() - t


def run_once(path: Path) -> dict[str, float]:
    """One timed pass: wall seconds per stage, process CPU seconds (all threads) and the cluster ETPR."""
    load_before = os.getloadavg()[0]
    ref = reference_s()
    c0, t0 = time.process_time(), time.perf_counter()
    ev, issues = load_events(path)
    t1 = time.perf_counter()
    led = compute_ledger(ev)
    t2 = time.perf_counter()
    rep = build_report(led, source=str(path), issues=issues)
    t3, c3 = time.perf_counter(), time.process_time()
    return {"load_s": t1 - t0, "account_s": t2 - t1, "report_s": t3 - t2, "total_s": t3 - t0, "cpu_s": c3 - c0,
            "loadavg_1m_before": load_before, "reference_s": ref, "etpr": rep.cluster.etpr or 0.0, "events": float(ev.height)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=60.0)
    args = ap.parse_args()
    tg = time.perf_counter()
    events = synth_events(args.jobs)
    gen_s = time.perf_counter() - tg
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "events.parquet"
        events.write_parquet(path)
        size = path.stat().st_size
        del events
        runs = [run_once(path) for _ in range(args.runs)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    best = min(runs, key=lambda r: r["total_s"])
    result = {
        "benchmark": "etpr_accounting",
        "synthetic": True,
        "jobs": args.jobs,
        "events": int(med["events"]),
        "input": f"parquet, {size / 1e6:.1f} MB",
        "runs": args.runs,
        "best_s": {k: round(best[k], 3) for k in ("load_s", "account_s", "report_s", "total_s", "cpu_s")},
        "median_s": {k: round(med[k], 3) for k in ("load_s", "account_s", "report_s", "total_s", "cpu_s")},
        "all_total_s": [round(r["total_s"], 3) for r in runs],
        "all_cpu_s": [round(r["cpu_s"], 3) for r in runs],
        "loadavg_1m_before_runs": [round(r["loadavg_1m_before"], 2) for r in runs],
        "reference_sort_s_per_run": [round(r["reference_s"], 3) for r in runs],
        "note": "wall time on a shared 2-core machine: other sessions' load inflates it; cpu_s is the process's "
                "CPU time over all threads; loadavg_1m_before_runs and the reference sort (4 M floats) per run say how "
                "contended each run was. within_budget judges the best run (the least disturbed one).",
        "jobs_per_s_best": round(args.jobs / best["total_s"]),
        "budget_s": args.budget_s,
        "within_budget": best["total_s"] <= args.budget_s,
        "median_within_budget": med["total_s"] <= args.budget_s,
        "cluster_etpr": round(med["etpr"], 4),
        "generate_s": round(gen_s, 2),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "polars": pl.__version__},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
