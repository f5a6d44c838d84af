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

``--interleave B``: instead of pairs of runs, ONE long watched run (``--steps``) in which the agents are stopped
(SIGSTOP) and continued (SIGCONT) in alternating blocks of ``B`` seconds; each train step is assigned to the block
its record starts in (steps that cross a block boundary are left out) and each adjacent (on, off) pair of blocks
gives a ratio of median step times. The same run, the same seconds of the machine's drift: the ratio's spread is
then the step noise within a few seconds, not the background load of two different minutes. While stopped an agent
reads nothing; once continued it catches up on the block it missed, so an "on" block carries up to twice the
agent's steady work: the ratio overstates the overhead, never understates it. ``B`` must stay below the agents'
hang floor (5 s in the lab) so that the pause is not taken for a hang. Torchrun's console goes through the
agent's pipe: the lab's console is ~2 KB per run, far below a pipe's 64 KiB, so a stopped agent never blocks it.

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


def agent_procs(run_dir: str) -> list[psutil.Process]:
    """The ``diag watch`` processes of one run: their command line has ``watch``, ``--state-dir`` and names
    ``run_dir``."""
    out = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if "watch" in cmd and "--state-dir" in cmd and any(run_dir in c for c in cmd):
            out.append(proc)
    return out


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
            for proc in agent_procs(self.run_dir):
                with contextlib.suppress(psutil.Error):
                    self.agents[proc.pid] = sum(proc.cpu_times()[:2])
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


class Toggler(threading.Thread):
    """Stop and continue the agents of one watched run (``diag watch`` processes whose command line names ``run``)
    in alternating blocks of ``block_s`` seconds, from the moment the agents exist (blocks before the first step hold
no step and are dropped). ``blocks``: ``(start,
    end, on)`` in wall-clock seconds. The agents are always continued when it stops."""

    def __init__(self, run: Path, block_s: float) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.block_s, self.stop = run, block_s, threading.Event()
        self.blocks: list[tuple[float, float, bool]] = []

    def _agents(self) -> list[psutil.Process]:
        return agent_procs(str(self.run_dir))

    def _signal(self, procs: list[psutil.Process], on: bool) -> None:
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.resume() if on else p.suspend()

    def run(self) -> None:
        procs: list[psutil.Process] = []
        while not procs and not self.stop.wait(0.2):
            procs = self._agents()
        on = True
        try:
            while not self.stop.is_set():
                procs = self._agents() or procs
                self._signal(procs, on)
                t0 = time.time()
                self.stop.wait(self.block_s)
                self.blocks.append((t0, time.time(), on))
                on = not on
        finally:
            self._signal(self._agents() or procs, True)


def block_ratios(blocks: list[tuple[float, float, bool]], records: list[dict[str, Any]], min_steps: int = 5,
                 ) -> tuple[list[dict[str, Any]], list[float], list[float]]:
    """Per adjacent pair of blocks ``(2k, 2k+1)`` (one on, one off), the ratio on / off of the median and of the mean
    step time (seconds, ``end - start``) of the train records that start and end inside each block; pairs with fewer
    than ``min_steps`` steps in either block are left out. Returns ``(rows, on_steps, off_steps)``, the last two
    every step time of the on and the off blocks."""
    per_block: list[list[float]] = [[] for _ in blocks]
    for r in records:
        if r.get("kind", "train") != "train":
            continue
        for i, (b0, b1, _) in enumerate(blocks):
            if b0 <= r["start"] and r["end"] <= b1:
                per_block[i].append(float(r["end"]) - float(r["start"]))
                break
    rows = []
    for i in range(0, len(blocks) - 1, 2):
        pair = {blocks[j][2]: per_block[j] for j in (i, i + 1)}
        if len(pair.get(True, [])) >= min_steps and len(pair.get(False, [])) >= min_steps:
            rows.append({"block": i, "on_steps": len(pair[True]), "off_steps": len(pair[False]),
                         "ratio_median": statistics.median(pair[True]) / statistics.median(pair[False]),
                         "ratio_mean": statistics.fmean(pair[True]) / statistics.fmean(pair[False])})
    on_all = [x for j, b in enumerate(blocks) if b[2] for x in per_block[j]]
    off_all = [x for j, b in enumerate(blocks) if not b[2] for x in per_block[j]]
    return rows, on_all, off_all


def interleaved(a: argparse.Namespace, sc: Any, work: Path, job_cpus: tuple[int, ...] | None) -> dict[str, Any]:
    """One long watched run with the agents stopped in every other block (see the module docstring)."""
    from diag_service.lab.live import LiveService
    from diag_service.lab.runner import run_scenario

    run_s = max(sc.timeouts.run_s, int(a.steps * 0.5) + 120)
    sc = sc.model_copy(update={"steps": a.steps, "timeouts": sc.timeouts.model_copy(update={"run_s": run_s})})
    out = work / "interleaved"
    with LiveService(work / "service") as live:
        tog = Toggler(out, a.interleave)
        tog.start()
        try:
            run_scenario(sc, out, seed=a.seed, nodes=a.nodes, live=live, job_cpus=job_cpus)
        finally:
            tog.stop.set()
            tog.join()
    rows, on_all, off_all = block_ratios(tog.blocks, _records(out))
    return {
        "design": "interleaved", "block_s": a.interleave, "steps": a.steps, "blocks": len(tog.blocks),
        "block_pairs": len(rows), "steps_on": len(on_all), "steps_off": len(off_all),
        "ratio_of_median_step": spread([r["ratio_median"] for r in rows], a.seed) if rows else None,
        "ratio_of_mean_step": spread([r["ratio_mean"] for r in rows], a.seed) if rows else None,
        "pooled_ratio_of_median_step": round(statistics.median(on_all) / statistics.median(off_all), 4)
        if on_all and off_all else None,
        "rows": rows,
    }


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
    ap.add_argument("--interleave", type=float, default=None, metavar="BLOCK_S",
                    help="one long watched run, the agents stopped in every other block of BLOCK_S seconds (< 5)")
    ap.add_argument("--steps", type=int, default=1500, help="steps of the --interleave run; default 1500")
    ap.add_argument("--combine", type=Path, nargs="+", default=None, metavar="RESULT",
                    help="pool the block pairs of earlier --interleave results into one spread (written to --out)")
    a = ap.parse_args()
    if a.combine:
        docs = [json.loads(f.read_text()) for f in a.combine]
        rows = [r for d in docs for r in d["rows"]]
        res = {"design": "interleaved, combined", "sources": [str(f) for f in a.combine],
               "block_pairs": len(rows), "seeds": [d["seed"] for d in docs],
               "ratio_of_median_step": spread([r["ratio_median"] for r in rows], a.seed),
               "ratio_of_mean_step": spread([r["ratio_mean"] for r in rows], a.seed), "target": 1.01}
        a.out.write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps(res, indent=2))
        return
    if a.interleave is not None and not 0.5 <= a.interleave < 5:
        ap.error("--interleave must be at least 0.5 s and below the agents' 5 s hang floor")
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
    if a.interleave is not None:
        res = interleaved(a, sc, work, job_cpus)
        res.update({"scenario": a.scenario, "nodes": a.nodes, "seed": a.seed,
                    "job_cpus": list(job_cpus) if job_cpus else None, "side_cpus": side_cpus, "target": 1.01,
                    "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                "load_avg_1m_end": round(os.getloadavg()[0], 2)},
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=2))
        return
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
