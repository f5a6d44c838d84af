"""Synthetic lifecycle events for the ETPR benchmark and tests (numpy, seeded; marked synthetic).

Per job: queue, allocation, start-up with a checkpoint load, first step, throughput samples (10% of jobs run
slow for a while), checkpoints with blocking durations, and for 30% of the jobs a failure (fail-stop or
hang, with onset, category, node; half of them diagnosed) followed by a restart, or (5% of the others) a kill.
Rows are shuffled, so that the ledger's sort and its out-of-order accounting are exercised.
"""

from __future__ import annotations

import numpy as np
import polars as pl

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
