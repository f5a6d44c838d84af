#!/usr/bin/env python3
"""The node agent's overhead on the training job's step time, paired (issue 22: at most 1 %).

Each pair is two real lab runs of a clean scenario with the same seed (same data, same jitter), one bare and
one watched (``--watch``: a local ``diag serve`` and one ``diag watch`` per simulated node wrapping its
torchrun), the order alternating between pairs so a drift of the shared machine does not favour one arm. Per
run: the median and the mean of the train steps' time (``end - start`` of every rank's record in the run's
``timing.jsonl``) and the load average when it ended; for a watched run also the CPU seconds of its two agents
and of the service while it ran, per second of training (first step's start to last step's end): what the
agents take from the job's machine, which the step-time ratio cannot resolve on a shared machine. Per pair: the
ratio watched / bare. Reported: the median ratio over the pairs, its spread (min, max, interquartile range)
and a bootstrap 95 % interval of the median (10 000 resamples of the pairs, seeded), for the median and the
mean step time.

This machine is shared (2 cores, other workers' jobs): a pair's two runs do not see the same background load,
which is the spread's main part; the interval, not the point, says whether 1 % is met.

    python eval/bench/live_overhead.py [--pairs 8] [--scenario slow_control_clean] [--seed 906] [--job-cpus 0]

``--job-cpus``: the job's torchrun and ranks run pinned to these CPUs in both arms, this script, the service and the
agents on the others (a cluster node gives the job its cores and the agent one of the spare ones): the ratio then
shows what the agent costs the job besides CPU time (file reads, the page cache, memory bandwidth).

Writes ``eval/bench/results/live_overhead.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: Bootstrap resamples of the pairs for the interval of the median ratio.
BOOTSTRAP = 10_000


class CpuSampler(threading.Thread):
    """CPU seconds (user + system) of one watched run's agents (the ``diag watch`` processes whose state folder is
    under ``run``) and of the service process, sampled every 0.5 s (an agent's last sample is taken at most that long
    before it exits, so its total is a slight undercount)."""

    def __init__(self, run: Path, service_pid: int) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.stop = str(run), threading.Event()
        self.agents: dict[int, float] = {}
        self.service = psutil.Process(service_pid)
        self.service_start = sum(self.service.cpu_times()[:2])
        self.service_cpu_s = 0.0

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for proc in psutil.process_iter(["pid", "cmdline"]):
                cmd = proc.info.get("cmdline") or []
                if "watch" in cmd and "--state-dir" in cmd and any(self.run_dir in c for c in cmd):
                    with contextlib.suppress(psutil.Error):
                        self.agents[proc.info["pid"]] = sum(proc.cpu_times()[:2])
        self.service_cpu_s = sum(self.service.cpu_times()[:2]) - self.service_start


def step_times(run: Path) -> list[float]:
    """Seconds of every train step of every rank (``end - start`` of the run's ``timing.jsonl``)."""
    out = []
    for line in (run / "timing.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kind", "train") == "train" and r.get("end") is not None and r.get("start") is not None:
            out.append(float(r["end"]) - float(r["start"]))
    return out


def _records(run: Path) -> list[dict[str, Any]]:
    return [r for r in (json.loads(x) for x in (run / "timing.jsonl").read_text().splitlines() if x.strip())
            if r.get("start") is not None and r.get("end") is not None]


def spread(ratios: list[float], seed: int) -> dict[str, Any]:
    """Median, min, max, quartiles and the bootstrap 95 % interval of the median of ``ratios``."""
    rs = sorted(ratios)
    rng = random.Random(seed)
    boot = sorted(statistics.median(rng.choices(rs, k=len(rs))) for _ in range(BOOTSTRAP))
    q = statistics.quantiles(rs, n=4) if len(rs) >= 2 else [rs[0]] * 3
    return {"median": round(statistics.median(rs), 4), "min": round(rs[0], 4), "max": round(rs[-1], 4),
            "q1": round(q[0], 4), "q3": round(q[2], 4),
            "ci95_median": [round(boot[int(0.025 * BOOTSTRAP)], 4), round(boot[int(0.975 * BOOTSTRAP) - 1], 4)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--scenario", default="slow_control_clean")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--seed", type=int, default=906, help="seed of pair i is seed + i (both arms)")
    ap.add_argument("--work", type=Path, default=None, help="folder for the runs (default: a new temporary one)")
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "bench" / "results" / "live_overhead.json")
    ap.add_argument("--job-cpus", default=None,
                    help="pin the job (every node's torchrun and ranks) to these CPUs, e.g. 0; this script, the service "
                         "and the agents go to the others: a node where the job has its cores to itself")
    a = ap.parse_args()
    job_cpus = tuple(int(c) for c in a.job_cpus.split(",")) if a.job_cpus else None
    side_cpus = sorted(os.sched_getaffinity(0) - set(job_cpus)) if job_cpus else None
    if job_cpus:
        if not side_cpus:
            ap.error("--job-cpus leaves no CPU for the service and the agents")
        os.sched_setaffinity(0, side_cpus)  # inherited by the service and the agents started below

    from diag_service.lab.live import LiveService
    from diag_service.lab.runner import run_scenario
    from diag_service.lab.scenarios import resolve_scenario

    sc = resolve_scenario(a.scenario)
    work = a.work or Path(tempfile.mkdtemp(prefix="live-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    pairs: list[dict[str, Any]] = []
    with LiveService(work / "service") as live:
        for i in range(a.pairs):
            got: dict[str, Any] = {"seed": a.seed + i}
            order = ("bare", "watched") if i % 2 == 0 else ("watched", "bare")
            got["order"] = list(order)
            for arm in order:
                out = work / f"{i:02d}-{arm}"
                t0 = time.time()
                cpu = None
                if arm == "watched" and live.proc is not None:
                    cpu = CpuSampler(out, live.proc.pid)
                    cpu.start()
                run_scenario(sc, out, seed=a.seed + i, nodes=a.nodes, live=live if arm == "watched" else None,
                             job_cpus=job_cpus)
                st = step_times(out)
                got[arm] = {"median_step_s": statistics.median(st), "mean_step_s": statistics.fmean(st),
                            "steps": len(st), "wall_s": round(time.time() - t0, 2),
                            "load_avg_1m": round(os.getloadavg()[0], 2)}
                if cpu is not None:
                    cpu.stop.set()
                    cpu.join()
                    train_s = max(r["end"] for r in _records(out)) - min(r["start"] for r in _records(out))
                    got[arm].update({"agents_cpu_s": round(sum(cpu.agents.values()), 2),
                                     "service_cpu_s": round(cpu.service_cpu_s, 2),
                                     "training_wall_s": round(train_s, 2)})
            got["ratio_median"] = got["watched"]["median_step_s"] / got["bare"]["median_step_s"]
            got["ratio_mean"] = got["watched"]["mean_step_s"] / got["bare"]["mean_step_s"]
            pairs.append(got)
            print(json.dumps(got), flush=True)
    loads = [p[arm]["load_avg_1m"] for p in pairs for arm in ("bare", "watched")]
    res = {
        "scenario": a.scenario, "nodes": a.nodes, "seed": a.seed, "pairs": len(pairs),
        "ratio_of_median_step": spread([p["ratio_median"] for p in pairs], a.seed),
        "ratio_of_mean_step": spread([p["ratio_mean"] for p in pairs], a.seed),
        **({"agents_cpu_s_per_training_s": spread([p["watched"]["agents_cpu_s"] / p["watched"]["training_wall_s"]
                                                   for p in pairs], a.seed),
            "service_cpu_s_per_training_s": spread([p["watched"]["service_cpu_s"] / p["watched"]["training_wall_s"]
                                                    for p in pairs], a.seed)}
           if pairs and "agents_cpu_s" in pairs[0]["watched"] else {}),
        "job_cpus": list(job_cpus) if job_cpus else None, "side_cpus": side_cpus,
        "env": {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ},
        "target": 1.01,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1m": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)}},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "note": "ratio = step time with the agents / without, same seed, same pair; the machine is shared",
        "rows": pairs,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
