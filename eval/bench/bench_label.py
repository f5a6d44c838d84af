#!/usr/bin/env python3
"""Benchmark `diag label`: jobs per second with the local process pool and with Ray Data, by worker count.

What it does:

0. **Parallel capacity**: a pure-Python loop in N processes versus one, at the start and the end:
   on this shared machine the other core is often busy with other work, and then no engine can
   scale (the number says how many cores the run really had).
1. **Generates an archive** of ``--jobs`` small job bundles (default 400) in a temporary folder:
   every 4th job a folder holding one of the 16 real logs of ``../shared/data/incidents_dev`` in
   turn, every 20th the bundled 2-node torchrun example, every 50th a bad bundle (empty file, binary
   file, so error rows are part of the mix), the rest synthetic torchrun jobs (a console log with
   every rank's training steps, one rank's traceback and torchrun's error report, plus a
   ``dmesg.log`` for kernel-side faults) of 10 failure kinds (:data:`SYNTHETIC_KINDS`: CUDA OOM, no
   space left, corrupt checkpoint, missing module, config key, illegal memory access, NaN loss,
   rendezvous timeout, Xid 79, host OOM kill) drawn with skewed weights (``--seed``). That gives 27
   distinct root-cause clusters, from 2,200 jobs down to 400 on 10,000 jobs.
2. **Reference**: the same jobs labelled in this process, one after the other, by one
   :class:`~diag_service.label.Labeller` (no pool, no ledger): what one core does without any
   orchestration (median of 3 passes after an untimed one that warms the page cache and catalogs).
   Measured at the start and again at the end; engine rates are also given as a ratio to the mean
   (timings here are noisy: the ratio measured in the same run is the number to compare).
3. **Runs** :func:`~diag_service.label.label_archive` for every engine (``--engines local,ray``),
   worker count (``--workers 1,2``; default 1 and every core), knowledge-base setting (``--kb off`` by
   default; ``--kb off,on`` adds runs with the knowledge base's MiniLM embedder loaded in every
   worker and a similar-incident lookup per job) and model setting (``--llm off`` by default;
   ``--llm off,on`` adds runs with one model summary per cluster, written in the driver after the
   labelling; the summary cache is off, ``LlmConfig(cache=False)``, and the model is unloaded before
   each run, so every run loads it and writes every summary itself), ``--runs`` times each (default
   3, medians), into a fresh output folder each time. Runs without the model come first, then those
   with it in the order of ``--model-cells`` (e.g. ``local:1,ray:2,local:2,ray:1``). Ray is started
   before a run of Ray configurations (``ray.init``, local, all cores, no dashboard; its start-up is
   reported apart in ``ray_init_s``) and stopped before a local one (its daemons would count).
   For each run: **wall** seconds and **CPU** seconds (user + system of the whole process tree:
   driver, workers, Ray's daemons and actors, the model), **end-to-end** jobs/s (engine start-up,
   worker spawn, model loading and summaries included), **label stage** jobs/s, **steady** jobs/s
   (from the first committed batch to the last, i.e. what a long run converges to), the number of
   clusters, and the 1/5/15-minute load averages (``/proc/loadavg``) before and after. With the
   model: clusters summarised (by the model / by the fallback), summary seconds (total, median,
   max), the model's load seconds, the backend and the threads it was loaded with.
   ``--no-reference`` skips step 2 (on 10,000 jobs its 8 passes take minutes).

The JSON is rewritten after every configuration, so an interrupted run keeps what it measured.
Writes ``eval/bench/results/bench_label.json`` (``--out``). Usage::

    .venv/bin/python eval/bench/bench_label.py                        # 400 jobs, local+ray, 1 and all workers
    .venv/bin/python eval/bench/bench_label.py --jobs 10000 --runs 1 --llm off,on --no-reference \
        --model-cells local:1,ray:2,local:2,ray:1 --out eval/bench/results/bench_label_10k.json  # the 10,000-job matrix
    .venv/bin/python eval/bench/bench_label.py --kb off,on --engines local --runs 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from diag_service.label import Job, Labeller, LabelOptions, LabelRequest, LocalEngine, RayEngine, label_archive  # noqa: E402
from diag_service.label.inputs import discover_jobs  # noqa: E402

DEV_LOGS = ROOT.parent / "shared" / "data" / "incidents_dev" / "logs"
EXAMPLE = ROOT / "examples" / "torchrun_shape_mismatch_2x2"


SITE = "/usr/local/lib/python3.10/dist-packages"

#: Failure kinds of the synthetic jobs: name -> (weight, lines printed by the failing rank, dmesg lines, exit code).
#: Real-looking lines (PyTorch 2.x / NCCL / kernel wording); {placeholders} vary per job (sizes, ids, hosts...).
SYNTHETIC_KINDS: dict[str, tuple[int, list[str], list[str], int]] = {
    "cuda_oom": (30, [
        f'  File "{SITE}/torch/nn/modules/module.py", line 1747, in _call_impl',
        "    return forward_call(*args, **kwargs)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib}.00 GiB. GPU {gpu} has a total capacity of "
        "79.15 GiB of which {small}.{n2} MiB is free. Including non-PyTorch memory, this process has 79.{n2} GiB memory in use.",
    ], [], 1),
    "no_space": (14, [
        f'  File "{SITE}/torch/serialization.py", line 652, in save',
        "    with _open_zipfile_writer(f) as opened_zipfile:",
        "OSError: [Errno 28] No space left on device",
    ], [], 1),
    "ckpt_corrupt": (8, [
        f'  File "{SITE}/torch/serialization.py", line 1065, in load',
        "    with _open_zipfile_reader(opened_file) as opened_zipfile:",
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
    ], [], 1),
    "missing_module": (6, [
        '  File "/workspace/model/attention.py", line 7, in <module>',
        "    from flash_attn import flash_attn_func",
        "ModuleNotFoundError: No module named 'flash_attn'",
    ], [], 1),
    "config_key": (6, [
        '  File "/workspace/schedule.py", line 41, in lr_at',
        "    decay = cfg['decay_every']",
        "KeyError: 'decay_every'",
    ], [], 1),
    "illegal_access": (8, [
        f'  File "{SITE}/torch/cuda/streams.py", line 225, in synchronize',
        "    super().synchronize()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    ], [], 1),
    "nan_loss": (7, [
        '  File "/workspace/train.py", line 233, in check_loss',
        "    raise FloatingPointError(f'loss is {{loss}} at step {{step}}')",
        "FloatingPointError: loss is nan at step {step}",
    ], [], 1),
    "rdzv_timeout": (6, [
        f'  File "{SITE}/torch/distributed/rendezvous.py", line 189, in _create_c10d_store',
        "    return TCPStore(",
        "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to "
        "(10.{n1}.{n2}.{n3}, 29500).",
    ], [], 1),
    "xid79": (5, [
        "RuntimeError: CUDA error: unspecified launch failure",
    ], ["[{uptime}.{n3}] NVRM: Xid (PCI:0000:{bus}:00): 79, pid={pid}, name=python3, GPU has fallen off the bus.",
        "[{uptime}.{n4}] NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."], 1),
    "host_oom_kill": (6, [], [
        "[{uptime}.{n3}] Out of memory: Killed process {pid} (python3) total-vm:{big}kB, anon-rss:{big}kB, file-rss:0kB, "
        "shmem-rss:{n4}kB, UID:1000 pgtables:{n4}kB oom_score_adj:0",
        "[{uptime}.{n4}] oom_reaper: reaped process {pid} (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    ], -9),
}


def synthetic_job(folder: Path, kind: str, rng: random.Random) -> None:
    """One job bundle: a torchrun console log (training steps on every rank, then one rank's failure and
    torchrun's error report) and, for kernel-side kinds, a ``dmesg.log``."""
    _, err_lines, dmesg, exitcode = SYNTHETIC_KINDS[kind]
    world = rng.choice([2, 4, 8])
    bad = rng.randrange(world)
    host = f"gpu-node-{rng.randint(1, 64):02d}"
    pid0 = rng.randint(2000, 60000)
    v = {"gib": rng.randint(1, 12), "gpu": bad, "small": rng.randint(1, 900), "n1": rng.randint(0, 255),
         "n2": rng.randint(0, 99), "n3": rng.randint(0, 255), "n4": rng.randint(1000, 9999), "step": rng.randint(100, 90000),
         "pid": pid0 + bad, "bus": f"{rng.choice([0x1b, 0x3b, 0x5e, 0x86, 0xaf, 0xd8]):02x}",
         "uptime": rng.randint(10000, 900000), "big": rng.randint(10**7, 10**8)}
    ts = f"1129 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    lines = [f"W{ts}:01.000000 {pid0 - 1} torch/distributed/run.py:793] ",
             f"W{ts}:01.000000 {pid0 - 1} torch/distributed/run.py:793] *****************************************",
             f"W{ts}:01.000000 {pid0 - 1} torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for "
             "each process to be 1 in default, to avoid your system being overloaded, please further tune the variable "
             "for optimal performance in your application as needed. ",
             f"W{ts}:01.000000 {pid0 - 1} torch/distributed/run.py:793] *****************************************"]
    steps = rng.randint(5, 25)
    for s in range(1, steps + 1):
        for r in range(world):
            stamp = f"2026-11-29 {ts[5:]}:{10 + s // 10:02d},{rng.randint(0, 999):03d}"
            lines.append(f"[default{r}]:{stamp} INFO [rank{r}] step {v['step'] - steps + s} "
                         f"loss {rng.uniform(1.8, 2.6):.4f} step_time {rng.uniform(300, 420):.1f} ms")
    p = f"[default{bad}]:[rank{bad}]: "
    if err_lines:
        lines += [p + "Traceback (most recent call last):", p + '  File "/workspace/train.py", line 412, in <module>',
                  p + "    main()", p + '  File "/workspace/train.py", line 387, in main', p + "    trainer.fit()"]
        lines += [p + x.format(**v) for x in err_lines]
    sig = " (signal 9 SIGKILL)" if exitcode == -9 else ""
    lines += [f"E{ts}:59.000000 {pid0 - 1} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {exitcode}) "
              f"local_rank: {bad} (pid: {v['pid']}) of binary: /usr/bin/python3{sig}",
              "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              "============================================================", "train.py FAILED",
              "------------------------------------------------------------", "Root Cause (first observed failure):", "[0]:",
              f"  host      : {host}", f"  rank      : {bad} (local_rank: {bad})", f"  exitcode  : {exitcode} (pid: {v['pid']})",
              "============================================================"]
    folder.mkdir(parents=True)
    (folder / "console.log").write_text("\n".join(lines) + "\n")
    if dmesg:
        (folder / "dmesg.log").write_text("\n".join(x.format(**v) for x in dmesg) + "\n")


def generate(archive: Path, n: int, seed: int = 0) -> dict[str, int]:
    """``n`` job bundles in ``archive``; returns how many of each kind.

    Every 50th job is a bad bundle (empty or binary file), every 20th the bundled 2-node torchrun
    example, every 4th one of the 16 incidents_dev logs in turn (16 failure kinds, 16 clusters), the
    rest a synthetic job of one of :data:`SYNTHETIC_KINDS` (10 more failure kinds and clusters) drawn
    with the kinds' weights. About 27 distinct root-cause clusters in all, a few large, most small.
    """
    logs = sorted(DEV_LOGS.glob("dev-*.log")) if DEV_LOGS.is_dir() else []
    names, weights = list(SYNTHETIC_KINDS), [w for w, *_ in SYNTHETIC_KINDS.values()]
    rng = random.Random(seed)
    kinds: dict[str, int] = {"dev_log": 0, "example_2x2": 0, "bad": 0} | {f"synthetic_{k}": 0 for k in names}
    archive.mkdir(parents=True)
    for i in range(n):
        jid = f"job-{i:06d}"
        if i % 50 == 49:
            (archive / f"{jid}.log").write_bytes(b"" if i % 100 == 49 else bytes(range(256)) * 20)
            kinds["bad"] += 1
        elif i % 20 == 19:
            shutil.copytree(EXAMPLE, archive / jid)
            kinds["example_2x2"] += 1
        elif i % 4 == 0 and logs:
            log = logs[(i // 4) % len(logs)]
            (archive / jid).mkdir()
            shutil.copy(log, archive / jid / log.name)
            kinds["dev_log"] += 1
        else:
            kind = rng.choices(names, weights)[0]
            synthetic_job(archive / jid, kind, rng)
            kinds[f"synthetic_{kind}"] += 1
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
    """A progress sink that keeps the time of every committed batch and of each stage (``label``, ``summaries``)."""

    def __init__(self) -> None:
        self.stamps: list[tuple[float, int]] = []
        self.stages: dict[str, list[float]] = {}
        self._stage = ""

    def start(self, stage: str, total: int, done: int) -> None:
        self._stage = stage
        self.stages[stage] = [time.perf_counter()]

    def advance(self, n: int) -> None:
        if self._stage == "label":
            self.stamps.append((time.perf_counter(), n))

    def stop(self) -> None:
        self.stages[self._stage].append(time.perf_counter())

    def stage_s(self, stage: str) -> float | None:
        """Seconds the stage took, or ``None`` when it did not run."""
        t = self.stages.get(stage)
        return round(t[1] - t[0], 2) if t and len(t) == 2 else None

    def steady_rate(self) -> float | None:
        """Jobs per second from the first committed batch to the last."""
        if len(self.stamps) < 2:
            return None
        (t0, _), (t1, _) = self.stamps[0], self.stamps[-1]
        rows = sum(n for _, n in self.stamps[1:])
        return rows / (t1 - t0) if t1 > t0 else None


def loadavg() -> list[float]:
    """``/proc/loadavg``'s 1-, 5- and 15-minute load averages (runnable processes, whole machine)."""
    return [round(x, 2) for x in os.getloadavg()]


class TreeCpu:
    """CPU seconds (user + system) used by this process and all its descendants while it runs (a context manager).

    A thread samples the process tree every ``interval_s`` seconds and keeps each process's latest
    own CPU time; the result is the sum over every process seen of (last sample - first sample, or
    - 0 for a process born during the run). Sampling is needed because Ray's actors are reaped
    outside the tree when they stop, so a before/after difference of the tree (with reaped
    children's times) loses them; here a process that exits loses at most its last ``interval_s``
    of CPU. Counts the driver, the local pool's workers, Ray's daemons, workers and actors, the model.
    """

    def __init__(self, interval_s: float = 0.25) -> None:
        import psutil

        self.interval_s = interval_s
        self.me = psutil.Process()
        self.first: dict[tuple[int, float], float] = {}
        self.last: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.seconds = 0.0

    def _sample(self, baseline: bool) -> None:
        import psutil

        for p in [self.me, *self.me.children(recursive=True)]:
            try:
                t = p.cpu_times()
                key = (p.pid, p.create_time())
            except psutil.Error:
                continue
            own = t.user + t.system
            self.first.setdefault(key, own if baseline else 0.0)
            self.last[key] = own

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample(baseline=False)

    def __enter__(self) -> TreeCpu:
        self._sample(baseline=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(baseline=False)
        self.seconds = sum(self.last[k] - self.first[k] for k in self.last)


class TimedSummarizer:
    """``diag_service.llm.summarize`` with a given :class:`LlmConfig` (the bench disables the summary cache),
    recording each call's seconds, source (model / fallback) and the model's load time."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.calls: list[dict[str, Any]] = []
        self.backend: dict[str, Any] = {}

    def __call__(self, diagnosis: Any) -> Any:
        from diag_service.llm import summarize_detailed

        t0 = time.perf_counter()
        r = summarize_detailed(diagnosis, config=self.config)
        if not self.backend:  # what the model ran with (threads are chosen from the load when it is loaded)
            from diag_service.llm import get_backend

            try:
                b = get_backend(self.config)
                self.backend = {"name": b.name, "threads": list(getattr(b, "threads", ()) or ()) or None}
            except Exception as exc:  # noqa: BLE001 - reported, the run goes on with the fallback
                self.backend = {"error": f"{type(exc).__name__}: {exc}"}
        self.calls.append({"s": round(time.perf_counter() - t0, 2), "source": r.narrative.source,
                           "load_s": round(r.load_s, 2) if r.load_s else None, "cache_hit": r.cache_hit,
                           "attempts": len(r.attempts), "fallback_reason": (r.fallback_reason or "")[:200] or None})
        return r.narrative

    def stats(self) -> dict[str, Any]:
        """Clusters summarised, by source; total, median and max seconds per summary; model load seconds."""
        secs = [c["s"] for c in self.calls]
        loads = [c["load_s"] for c in self.calls if c["load_s"]]
        return {
            "clusters_summarised": len(self.calls),
            "by_model": sum(c["source"] == "model" for c in self.calls),
            "fallback": sum(c["source"] == "fallback" for c in self.calls),
            "cache_hits": sum(c["cache_hit"] for c in self.calls),
            "summary_s_total": round(sum(secs), 1),
            "summary_s_median": round(statistics.median(secs), 2) if secs else None,
            "summary_s_max": max(secs) if secs else None,
            "model_load_s": max(loads) if loads else None,
            "fallback_reasons": sorted({c["fallback_reason"] for c in self.calls if c["fallback_reason"]})[:5],
        }


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


def one_run(archive: Path, work: Path, engine: Any, options: LabelOptions, llm: bool = False) -> dict[str, Any]:
    """Label ``archive`` into a fresh output folder; wall and CPU seconds, rates, clusters, load average.

    With ``llm``: ``diag_service.llm.summarize`` is replaced, for this run, by a :class:`TimedSummarizer`
    with the summary cache off (``LlmConfig(cache=False)``) and the model unloaded first, so every run
    pays the model load and writes every cluster's summary itself.
    """
    out = work / f"out-{time.monotonic_ns()}"
    clock = Clock()
    summarizer = None
    saved = None
    if llm:
        import diag_service.llm as llm_pkg
        from diag_service.llm import LlmConfig, clear_backends

        clear_backends()
        summarizer = TimedSummarizer(LlmConfig.load(cache=False))
        saved, llm_pkg.summarize = llm_pkg.summarize, summarizer  # type: ignore[assignment]
    load_before = loadavg()
    cpu = TreeCpu()
    t0 = time.perf_counter()
    try:
        with cpu:
            res = label_archive(LabelRequest(archive=str(archive), out=str(out), options=options, llm=llm),
                                progress=clock, engine=engine)
    finally:
        wall = time.perf_counter() - t0
        if saved is not None:
            import diag_service.llm as llm_pkg

            llm_pkg.summarize = saved  # type: ignore[assignment]
    load_after = loadavg()
    shutil.rmtree(out, ignore_errors=True)
    steady = clock.steady_rate()
    run: dict[str, Any] = {
        "jobs": res.summary.jobs, "errors": res.summary.errors, "clusters": res.summary.clusters,
        "wall_s": round(wall, 2), "cpu_s": round(cpu.seconds, 2), "jobs_per_s": round(res.summary.jobs / wall, 1),
        "label_stage_s": clock.stage_s("label"),
        "label_stage_jobs_per_s": round(res.summary.jobs / s, 1) if (s := clock.stage_s("label")) else None,
        "steady_jobs_per_s": round(steady, 1) if steady else None,
        "summaries_stage_s": clock.stage_s("summaries"),
        "loadavg_before": load_before, "loadavg_after": load_after,
    }
    if summarizer is not None:
        run["llm"] = summarizer.stats() | {"backend": summarizer.backend, "cache": False}
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--workers", default=None, help="comma-separated worker counts (default: 1 and all cores)")
    ap.add_argument("--kb", default="off", help="comma-separated: off, on (knowledge base embedder in every worker)")
    ap.add_argument("--llm", default="off", help="comma-separated: off, on (one model summary per cluster, cache off)")
    ap.add_argument("--model-cells", default=None,
                    help="order of the runs with the model, e.g. local:1,ray:2,local:2,ray:1 (default: engines x workers)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic jobs")
    ap.add_argument("--no-reference", action="store_true", help="skip the in-process reference (4 passes over every job)")
    ap.add_argument("--out", default=str(ROOT / "eval" / "bench" / "results" / "bench_label.json"))
    args = ap.parse_args()

    cores = os.cpu_count() or 1
    workers = [int(w) for w in args.workers.split(",")] if args.workers else sorted({1, cores})
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    kb_modes = [k.strip() for k in args.kb.split(",") if k.strip()]
    llm_modes = [k.strip() == "on" for k in args.llm.split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench_label_"))
    os.environ.setdefault("DIAG_HOME", str(work / "diag_home"))  # the knowledge base store of this benchmark only
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "jobs": args.jobs, "batch_size": args.batch_size, "runs": args.runs,
        "machine": {"platform": platform.platform(), "cpus": cores, "python": platform.python_version(),
                    "load_avg_start": list(os.getloadavg())},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_s_means": "user+system CPU seconds of the benchmark's process tree during the run (workers, Ray's "
                       "daemons and actors, the driver and its model), sampled every 0.25 s, see TreeCpu",
    }

    def save() -> None:
        out_path.write_text(json.dumps(result, indent=2) + "\n")

    try:
        archive = work / "archive"
        t0 = time.perf_counter()
        result["archive"] = generate(archive, args.jobs, args.seed) | {"generate_s": round(time.perf_counter() - t0, 2)}
        print(f"archive: {result['archive']}", file=sys.stderr)
        result["parallel_capacity_start"] = parallel_capacity(max(workers))
        print(f"parallel capacity: {result['parallel_capacity_start']}", file=sys.stderr)
        ref = None
        if not args.no_reference:
            result["reference_in_process"] = {"start": reference(archive, LabelOptions(kb="off"))}
            ref = result["reference_in_process"]["start"]["jobs_per_s"]
            print(f"reference (in process, 1 core, kb off): {ref} jobs/s", file=sys.stderr)
        if "on" in kb_modes:  # build the store and check the model once, outside the timings
            t0 = time.perf_counter()
            Labeller(LabelOptions(kb="on"))
            result["kb_first_open_s"] = round(time.perf_counter() - t0, 2)
        configs: list[dict[str, Any]] = []
        result["configs"] = configs
        # Every configuration without the model first (quick), then with it (the summaries take minutes),
        # in the order of --model-cells. Ray is started for a run of Ray configurations and stopped before local ones.
        cells = [(False, e, kb, w) for e in engines for kb in kb_modes for w in workers] if False in llm_modes else []
        if True in llm_modes:
            order = ([(c.split(":")[0], int(c.split(":")[1])) for c in args.model_cells.split(",")] if args.model_cells
                     else [(e, w) for e in engines for w in workers])
            cells += [(True, e, kb, w) for e, w in order for kb in kb_modes]
        ray_mod: Any = None
        try:
            for llm, engine_name, kb, w in cells:
                if engine_name == "ray" and ray_mod is None:  # its start-up is reported apart, in ray_init_s
                    import ray

                    t0 = time.perf_counter()
                    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
                    result.setdefault("ray_init_s", []).append(round(time.perf_counter() - t0, 2))
                    ray_mod = ray
                elif engine_name == "local" and ray_mod is not None:  # Ray's daemons would count in local runs
                    ray_mod.shutdown()
                    ray_mod = None
                runs = []
                for _ in range(args.runs):
                    engine = (LocalEngine(workers=w, batch_size=args.batch_size) if engine_name == "local"
                              else RayEngine(workers=w, batch_size=args.batch_size))
                    runs.append(one_run(archive, work, engine, LabelOptions(kb=kb), llm=llm))  # type: ignore[arg-type]
                e2e = statistics.median(r["jobs_per_s"] for r in runs)
                steadies = [r["steady_jobs_per_s"] for r in runs if r["steady_jobs_per_s"]]
                steady = statistics.median(steadies) if steadies else None
                configs.append({"engine": engine_name, "workers": w, "kb": kb, "llm": llm, "median_e2e_jobs_per_s": e2e,
                                "median_steady_jobs_per_s": steady, "runs": runs})
                save()
                last = runs[-1]
                print(f"{engine_name:5} workers={w} kb={kb} llm={llm}: end-to-end {e2e} jobs/s, steady {steady} "
                      f"jobs/s, wall {last['wall_s']} s, cpu {last['cpu_s']} s, clusters {last['clusters']}, "
                      f"summaries {last.get('summaries_stage_s')} s, load {last['loadavg_before']} -> "
                      f"{last['loadavg_after']}", file=sys.stderr, flush=True)
        finally:
            if ray_mod is not None:
                ray_mod.shutdown()
        if ref is not None:
            # Measured again at the end: the machine's load changes during the benchmark; ratios use the mean.
            result["reference_in_process"]["end"] = reference(archive, LabelOptions(kb="off"))
            end = result["reference_in_process"]["end"]["jobs_per_s"]
            ref = round((ref + end) / 2, 1)
            result["reference_in_process"]["mean_jobs_per_s"] = ref
            print(f"reference again at the end: {end} jobs/s (mean {ref})", file=sys.stderr)
            for cfg in configs:
                steady = cfg["median_steady_jobs_per_s"]
                cfg["steady_vs_reference"] = round(steady / ref, 2) if steady else None
        result["parallel_capacity_end"] = parallel_capacity(max(workers))
        result["machine"]["load_avg_end"] = list(os.getloadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)
        save()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
