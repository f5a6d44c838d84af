#!/usr/bin/env python3
"""Benchmark `diag label`: jobs per second with the local process pool and with Ray Data, by worker count.

What it does:

0. **Parallel capacity**: a pure-Python loop in N processes versus one, at the start and the end:
   on this shared machine the other core is often busy with other work, and then no engine can
   scale (the number says how many cores the run really had).
1. **Generates an archive** of ``--jobs`` small job bundles (default 400) in a temporary folder:
   job folders holding one of the 16 real logs of ``../shared/data/incidents_dev`` (or, if absent,
   the bundled torchrun example) in turn, the bundled 2-node torchrun example as every 20th job, and
   a bad bundle (empty file, binary file) as every 50th, so error rows are part of the mix.
2. **Reference**: the same jobs labelled in this process, one after the other, by one
   :class:`~diag_service.label.Labeller` (no pool, no ledger): what one core does without any
   orchestration (median of 3 passes after an untimed one that warms the page cache and catalogs).
   Measured at the start and again at the end; engine rates are also given as a ratio to the mean
   (timings here are noisy: the ratio measured in the same run is the number to compare).
3. **Runs** :func:`~diag_service.label.label_archive` for every engine (``--engines local,ray``),
   worker count (``--workers 1,2``; default 1 and every core) and model setting (``--kb off`` by
   default; ``--kb off,on`` adds runs with the knowledge base's MiniLM embedder loaded in every
   worker and a similar-incident lookup per job), ``--runs`` times each (default 3, medians),
   into a fresh output folder each time. Ray is started once (``ray.init``, local, all cores, no
   dashboard; its start-up is reported apart) and shared by the Ray runs.
   For each run: **end-to-end** jobs/s (engine start-up, worker spawn and model loading included)
   and **steady** jobs/s (from the first committed batch to the last, i.e. what a long run
   converges to).

Writes ``eval/bench/results/bench_label.json`` (``--out``). Usage::

    .venv/bin/python eval/bench/bench_label.py                        # 400 jobs, local+ray, 1 and all workers
    .venv/bin/python eval/bench/bench_label.py --jobs 10000 --runs 1  # the issue's 10,000-job archive
    .venv/bin/python eval/bench/bench_label.py --kb off,on --engines local --runs 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from diag_service.label import Job, Labeller, LabelOptions, LabelRequest, LocalEngine, RayEngine, label_archive  # noqa: E402
from diag_service.label.inputs import discover_jobs  # noqa: E402

DEV_LOGS = ROOT.parent / "shared" / "data" / "incidents_dev" / "logs"
EXAMPLE = ROOT / "examples" / "torchrun_shape_mismatch_2x2"


def generate(archive: Path, n: int) -> dict[str, int]:
    """``n`` job bundles in ``archive``; returns how many of each kind."""
    logs = sorted(DEV_LOGS.glob("dev-*.log")) if DEV_LOGS.is_dir() else []
    kinds: dict[str, int] = {"dev_log": 0, "example_2x2": 0, "bad": 0}
    archive.mkdir(parents=True)
    for i in range(n):
        jid = f"job-{i:06d}"
        if i % 50 == 49:
            (archive / f"{jid}.log").write_bytes(b"" if i % 100 == 49 else bytes(range(256)) * 20)
            kinds["bad"] += 1
        elif i % 20 == 19 or not logs:
            shutil.copytree(EXAMPLE, archive / jid)
            kinds["example_2x2"] += 1
        else:
            log = logs[i % len(logs)]
            (archive / jid).mkdir()
            shutil.copy(log, archive / jid / log.name)
            kinds["dev_log"] += 1
    return kinds


def _burn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def parallel_capacity(procs: int, n: int = 4_000_000) -> dict[str, float]:
    """How many cores this machine gives right now: a pure-Python loop in ``procs`` processes versus one.

    On a shared machine the other cores may be busy with other work; then no engine can scale, and
    this number says so (2.0 on an idle 2-core machine, ~1.0 when the second core is taken).
    """
    import multiprocessing

    t0 = time.perf_counter()
    for _ in range(procs):
        _burn(n)
    serial = time.perf_counter() - t0
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        pool.map(_burn, [1000] * procs)
        t0 = time.perf_counter()
        pool.map(_burn, [n] * procs)
        parallel = time.perf_counter() - t0
    return {"procs": procs, "serial_s": round(serial, 2), "parallel_s": round(parallel, 2),
            "speedup": round(serial / parallel, 2)}


class Clock:
    """A progress sink that keeps the time of every committed batch."""

    def __init__(self) -> None:
        self.stamps: list[tuple[float, int]] = []

    def start(self, stage: str, total: int, done: int) -> None:
        pass

    def advance(self, n: int) -> None:
        self.stamps.append((time.perf_counter(), n))

    def stop(self) -> None:
        pass

    def steady_rate(self) -> float | None:
        if len(self.stamps) < 2:
            return None
        (t0, _), (t1, _) = self.stamps[0], self.stamps[-1]
        rows = sum(n for _, n in self.stamps[1:])
        return rows / (t1 - t0) if t1 > t0 else None


def reference(archive: Path, options: LabelOptions, passes: int = 3) -> dict[str, Any]:
    """Median jobs/s of ``passes`` in-process passes over every job, after one untimed pass (page cache, catalog)."""
    jobs: list[Job] = discover_jobs(archive)
    lab = Labeller(options)
    for j in jobs:
        lab.label(j)
    rates = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for j in jobs:
            lab.label(j)
        rates.append(len(jobs) / (time.perf_counter() - t0))
    return {"passes": [round(r, 1) for r in rates], "jobs_per_s": round(statistics.median(rates), 1)}


def one_run(archive: Path, work: Path, engine: Any, options: LabelOptions) -> dict[str, Any]:
    out = work / f"out-{time.monotonic_ns()}"
    clock = Clock()
    t0 = time.perf_counter()
    res = label_archive(LabelRequest(archive=str(archive), out=str(out), options=options), progress=clock, engine=engine)
    wall = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    steady = clock.steady_rate()
    return {"wall_s": round(wall, 2), "e2e_jobs_per_s": round(res.summary.jobs / wall, 1),
            "steady_jobs_per_s": round(steady, 1) if steady else None, "rows": res.summary.jobs, "errors": res.summary.errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--workers", default=None, help="comma-separated worker counts (default: 1 and all cores)")
    ap.add_argument("--kb", default="off", help="comma-separated: off, on (knowledge base embedder in every worker)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "eval" / "bench" / "results" / "bench_label.json"))
    args = ap.parse_args()

    cores = os.cpu_count() or 1
    workers = [int(w) for w in args.workers.split(",")] if args.workers else sorted({1, cores})
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    kb_modes = [k.strip() for k in args.kb.split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench_label_"))
    os.environ.setdefault("DIAG_HOME", str(work / "diag_home"))  # the knowledge base store of this benchmark only
    result: dict[str, Any] = {
        "jobs": args.jobs, "batch_size": args.batch_size, "runs": args.runs,
        "machine": {"platform": platform.platform(), "cpus": cores, "python": platform.python_version(),
                    "load_avg_start": list(os.getloadavg())},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    try:
        archive = work / "archive"
        t0 = time.perf_counter()
        result["archive"] = generate(archive, args.jobs) | {"generate_s": round(time.perf_counter() - t0, 2)}
        print(f"archive: {result['archive']}", file=sys.stderr)
        result["parallel_capacity_start"] = parallel_capacity(max(workers))
        print(f"parallel capacity: {result['parallel_capacity_start']}", file=sys.stderr)
        result["reference_in_process"] = {"start": reference(archive, LabelOptions(kb="off"))}
        ref = result["reference_in_process"]["start"]["jobs_per_s"]
        print(f"reference (in process, 1 core, kb off): {ref} jobs/s", file=sys.stderr)
        if "on" in kb_modes:  # build the store and check the model once, outside the timings
            t0 = time.perf_counter()
            Labeller(LabelOptions(kb="on"))
            result["kb_first_open_s"] = round(time.perf_counter() - t0, 2)
        ray_mod = None
        if "ray" in engines:
            import ray

            t0 = time.perf_counter()
            ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            result["ray_init_s"] = round(time.perf_counter() - t0, 2)
            ray_mod = ray
        configs = []
        try:
            for kb in kb_modes:
                for engine_name in engines:
                    for w in workers:
                        runs = []
                        for _ in range(args.runs):
                            engine = (LocalEngine(workers=w, batch_size=args.batch_size) if engine_name == "local"
                                      else RayEngine(workers=w, batch_size=args.batch_size))
                            runs.append(one_run(archive, work, engine, LabelOptions(kb=kb)))  # type: ignore[arg-type]
                        e2e = statistics.median(r["e2e_jobs_per_s"] for r in runs)
                        steadies = [r["steady_jobs_per_s"] for r in runs if r["steady_jobs_per_s"]]
                        steady = statistics.median(steadies) if steadies else None
                        cfg = {"engine": engine_name, "workers": w, "kb": kb, "median_e2e_jobs_per_s": e2e,
                               "median_steady_jobs_per_s": steady, "runs": runs}
                        configs.append(cfg)
                        print(f"{engine_name:5} workers={w} kb={kb}: end-to-end {e2e} jobs/s, steady {steady} jobs/s",
                              file=sys.stderr)
        finally:
            if ray_mod is not None:
                ray_mod.shutdown()
        # Measured again at the end: the machine's load changes during the benchmark; ratios use the mean.
        result["reference_in_process"]["end"] = reference(archive, LabelOptions(kb="off"))
        end = result["reference_in_process"]["end"]["jobs_per_s"]
        ref = round((ref + end) / 2, 1)
        result["reference_in_process"]["mean_jobs_per_s"] = ref
        print(f"reference again at the end: {end} jobs/s (mean {ref})", file=sys.stderr)
        for cfg in configs:
            steady = cfg["median_steady_jobs_per_s"]
            cfg["steady_vs_reference"] = round(steady / ref, 2) if steady else None
        result["configs"] = configs
        result["parallel_capacity_end"] = parallel_capacity(max(workers))
        result["machine"]["load_avg_end"] = list(os.getloadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
