"""Launch one fault-injection run under torchrun, watch it, bound it in time, and capture it.

A run is one or two torchrun agents (``node0``, ``node1``; c10d rendezvous on 127.0.0.1 at a free
port), each starting ``ranks / nodes`` workers of :mod:`diag_service.lab.train`. The runner:

- writes the training configuration into ``<out>/.lab/`` (removed after the run, since it holds
  the ground truth);
- polls every ``POLL_S`` seconds: rank registrations, step progress (for hang detection and the
  pre-hang snapshots), agent exits;
- takes stack snapshots (:mod:`diag_service.lab.dumps`) for hang scenarios: two before the hang,
  six during it;
- kills every process it started (agents by process group, then every descendant it ever saw,
  by PID and process group; the tree is followed with psutil) on timeout or at the end, so no
  process outlives the run; what a run opens (the process tree, console files, a port blocker, a
  broken file system, ``.lab/``) is on a ``contextlib.ExitStack``, so an error cleans up too;
- merges the per-rank feeds into ``timing.jsonl`` and ``events.jsonl`` and writes ``truth.json``,
  ``run.json`` and ``dumps/ranks.json``.

All times are unix seconds (``time.time()``); all durations are seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from diag_service.domain import FailureMode
from diag_service.jsonl import iter_jsonl, read_jsonl
from diag_service.lab import require_lab
from diag_service.lab.dumps import RankProc, StackDumper
from diag_service.lab.live import LiveService, free_port
from diag_service.lab.scenarios import CheckpointWriteFault, NoFault, Scenario

TRAIN_SCRIPT = Path(__file__).resolve().parent / "train.py"
#: Files of a run folder that are not logs of the job (ground truth, runner bookkeeping, host instrumentation).
NOT_LOGS = ("truth.json", "run.json", "events.jsonl", "host_cpu.jsonl", "live.json", "watch/*")
WORK_DIR = ".lab"
POLL_S = 0.2
PRE_HANG_SNAPSHOTS = 2
#: Created in the parts folder when a hang is detected: each rank then writes its Flight Recorder dump.
FR_REQUEST = "fr_dump.request"
#: Flight Recorder entries per rank for hang scenarios (TORCH_FR_BUFFER_SIZE; gloo records every collective).
FR_BUFFER = 2000
HANG_SNAPSHOTS = 6
KILL_GRACE_S = 5.0


@dataclass
class RunResult:
    """Outcome of one run (``status``: ``succeeded`` | ``failed`` | ``timeout``)."""

    out_dir: Path
    scenario: str
    status: str
    exit_codes: dict[str, int | None]
    duration_s: float
    hang_detected: bool
    snapshots: int
    dump_method: str | None
    truth: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- processes


def _running(p: psutil.Process) -> bool:
    """``p`` still runs: the same process (psutil checks its start time, so a recycled PID is not it)
    and not a zombie."""
    try:
        return p.is_running() and p.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


class HostCpuSampler:
    """Samples how busy the host's CPUs are, and how much of that is the run's own processes.

    Written for fail-slow runs (``host_cpu.jsonl``): on a shared host, other work taking CPU slows every
    rank of a clean run, and the lab's truth cannot say "no slowdown" for such a run. Each line, per
    interval of at least ``interval_s`` seconds: ``{"time", "host_busy_cores", "job_cores", "other_cores"}``
    (cores = CPU seconds per second; host: ``psutil.cpu_times()`` user+nice+system+irq+softirq+steal, i.e.
    ``/proc/stat``; job: the user+system time of every tracked process, ``psutil.Process.cpu_times()``;
    ``other_cores`` = host - job, i.e. what other work used). Analyzers must not read it (like ``truth.json``).
    """

    def __init__(self, path: Path, tracker: ProcessTracker, interval_s: float = 0.5) -> None:
        self.path, self.tracker, self.interval_s = path, tracker, interval_s
        self.last: tuple[float, float, dict[int, float]] | None = None
        self.rows: list[dict[str, float]] = []

    @staticmethod
    def _host_busy() -> float | None:
        """CPU seconds the host's CPUs were busy since boot (all CPUs), or None if unreadable."""
        try:
            t = psutil.cpu_times()
        except (psutil.Error, OSError):
            return None
        return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)

    @staticmethod
    def _proc_cpu(p: psutil.Process) -> float | None:
        """User + system CPU seconds of ``p`` (not of its children), or None if it is gone."""
        try:
            t = p.cpu_times()
        except psutil.Error:
            return None
        return t.user + t.system

    def sample(self) -> None:
        """Take a sample if ``interval_s`` has passed since the last one (never raises)."""
        now = time.time()
        if self.last is not None and now - self.last[0] < self.interval_s:
            return
        busy = self._host_busy()
        if busy is None:
            return
        procs = {p.pid: c for p in self.tracker.living() if (c := self._proc_cpu(p)) is not None}
        if self.last is not None:
            t0, b0, p0 = self.last
            dt = now - t0
            job = sum(c - p0[pid] for pid, c in procs.items() if pid in p0) / dt
            host = (busy - b0) / dt
            self.rows.append({"time": round(now, 3), "host_busy_cores": round(host, 3), "job_cores": round(job, 3),
                              "other_cores": round(max(0.0, host - job), 3)})
        self.last = (now, busy, procs)

    def write(self) -> None:
        """Write ``host_cpu.jsonl`` (nothing if no interval was measured)."""
        if self.rows:
            with open(self.path, "w", encoding="utf-8") as f:
                for r in self.rows:
                    f.write(json.dumps(r) + "\n")


class ProcessTracker:
    """Remembers every descendant of the launched agents, so that all can be killed.

    Processes are :class:`psutil.Process` objects, which know their start time: a recycled PID is
    never signalled.
    """

    def __init__(self) -> None:
        self.roots: list[subprocess.Popen[bytes]] = []
        self.seen: dict[int, psutil.Process] = {}

    def add_root(self, proc: subprocess.Popen[bytes]) -> None:
        """Track a launched agent (started in its own session, so its pgid is its pid)."""
        self.roots.append(proc)
        with contextlib.suppress(psutil.Error):
            self.seen[proc.pid] = psutil.Process(proc.pid)

    def refresh(self) -> None:
        """Add every living descendant of a tracked process (one scan of the process table)."""
        children: dict[int, list[psutil.Process]] = {}
        for p in psutil.process_iter(["ppid"]):
            children.setdefault(p.info["ppid"], []).append(p)
        stack = [p for p in self.seen.values() if _running(p)]
        while stack:
            for child in children.get(stack.pop().pid, []):
                known = self.seen.get(child.pid)
                if known is None or known != child:  # new, or a recycled PID now under our tree
                    self.seen[child.pid] = child
                    stack.append(child)

    def living(self) -> list[psutil.Process]:
        """Tracked processes still running (zombies excluded)."""
        return [p for p in self.seen.values() if _running(p)]

    def alive(self) -> list[int]:
        """PIDs of :meth:`living`."""
        return [p.pid for p in self.living()]

    def signal_all(self, sig: signal.Signals) -> None:
        """Send ``sig`` to every living tracked process and to the groups they lead."""
        for p in self.living():
            with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
                if os.getpgid(p.pid) == p.pid:  # psutil has no process-group call
                    os.killpg(p.pid, sig)
                else:
                    p.send_signal(sig)

    def terminate_all(self, grace_s: float = KILL_GRACE_S) -> None:
        """SIGTERM everything, wait up to ``grace_s`` seconds, then SIGKILL what is left.

        Waits by polling rather than ``psutil.wait_procs``: that would reap the agents, which are this
        process's children, and their ``Popen`` would then lose the exit code.
        """
        self.refresh()
        self.signal_all(signal.SIGTERM)
        deadline = time.time() + grace_s
        while time.time() < deadline:
            self._reap()
            self.refresh()
            if not self.living():
                return
            time.sleep(0.1)
        self.signal_all(signal.SIGKILL)
        deadline = time.time() + grace_s
        while time.time() < deadline and self.living():
            self._reap()
            time.sleep(0.1)
        self._reap()

    def _reap(self) -> None:
        for p in self.roots:
            with contextlib.suppress(Exception):
                p.poll()


# --------------------------------------------------------------------------- file systems


@dataclass
class _BrokenFs:
    path: Path
    method: str
    mounted: bool = False
    drop_privileges: bool = False

    def restore(self) -> None:
        """Unmount the file system, or make the folder writable again (so that it can be removed)."""
        if self.mounted:
            _umount(self.path)
        else:
            with contextlib.suppress(OSError):
                self.path.chmod(0o755)


def _mount_tmpfs(path: Path, opts: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "lab-ckpt", str(path)], capture_output=True, timeout=10, check=False)
    return r.returncode == 0


def _umount(path: Path) -> None:
    r = subprocess.run(["umount", str(path)], capture_output=True, timeout=10, check=False)
    if r.returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10, check=False)


def _prepare_broken_fs(fault: CheckpointWriteFault, path: Path, onset_step: int) -> _BrokenFs:
    """Make ``path`` a read-only or a full file system, by the best method this host allows."""
    path.mkdir(parents=True, exist_ok=True)
    if fault.fs == "readonly":
        if _mount_tmpfs(path, f"ro,size={fault.size_kib}k,mode=0755"):
            return _BrokenFs(path, "tmpfs-readonly", mounted=True)
        path.chmod(0o555)
        return _BrokenFs(path, "chmod-0555", drop_privileges=os.geteuid() == 0)
    if _mount_tmpfs(path, f"size={fault.size_kib}k,mode=0755"):
        filler = path / "shard-cache.bin"
        chunk = b"\0" * 4096
        with contextlib.suppress(OSError), open(filler, "wb") as f:
            while True:
                f.write(chunk)
                f.flush()
        return _BrokenFs(path, "tmpfs-full", mounted=True)
    # No mount: the checkpoint file the rank will write is a symlink to /dev/full (ENOSPC).
    (path / f"step-{onset_step:06d}.pt").symlink_to("/dev/full")
    return _BrokenFs(path, "dev-full-symlink")


# --------------------------------------------------------------------------- feeds


def _last_line(path: Path) -> dict[str, Any] | None:
    """The last complete JSON line of a (timing) file, or None."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read()
    except FileNotFoundError:
        return None
    last = None
    for _n, rec in iter_jsonl(io.BytesIO(tail)):  # the first line may be cut: skipped as not JSON
        last = rec
    return last


def _last_line_step(path: Path) -> int | None:
    """Step number of the last complete line of a timing file, or None."""
    rec = _last_line(path)
    return int(rec["step"]) if rec and "step" in rec else None


def _read_ranks(parts: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for p in parts.glob("rank-*.json"):
        with contextlib.suppress(json.JSONDecodeError, OSError, KeyError, ValueError):
            d = json.loads(p.read_text())
            out[int(d["rank"])] = d
    return out


# --------------------------------------------------------------------------- the run


@dataclass
class _Plan:
    scenario: Scenario
    ranks: int
    nodes: int
    faulty_rank: int | None
    onset_step: int
    seed: int
    job_cpus: tuple[int, ...] | None = None  # CPUs the job's torchrun and ranks are pinned to (None: not pinned)


def _plan(
    scenario: Scenario,
    ranks: int | None,
    faulty_rank: int | None,
    seed: int,
    nodes: int | None,
    onset_step: int | None,
) -> _Plan:
    n_ranks = ranks if ranks is not None else scenario.ranks
    n_nodes = nodes if nodes is not None else scenario.nodes
    if n_nodes not in (1, 2):
        raise ValueError("nodes must be 1 or 2")
    if n_ranks < 1 or n_ranks % n_nodes:
        raise ValueError(f"ranks ({n_ranks}) must be a positive multiple of nodes ({n_nodes})")
    onset = onset_step if onset_step is not None else scenario.onset_step
    if not 0 <= onset < scenario.steps:
        raise ValueError(f"onset step {onset} outside 0..{scenario.steps - 1}")
    fr: int | None = None
    if scenario.fault_is_per_rank:
        fr = faulty_rank if faulty_rank is not None else scenario.faulty_rank
        assert fr is not None
        if not 0 <= fr < n_ranks:
            raise ValueError(f"faulty rank {fr} outside 0..{n_ranks - 1}")
    return _Plan(scenario, n_ranks, n_nodes, fr, onset, seed)


class _Monitor:
    """The runner's polling state machine: rank registrations, progress, failures, hang, dumps."""

    def __init__(
        self,
        plan: _Plan,
        parts: Path,
        dumper: StackDumper,
        agents: dict[str, subprocess.Popen[bytes]],
        tracker: ProcessTracker,
        say: Callable[[str], None],
        t_started: float,
    ) -> None:
        self.plan = plan
        self.sc = plan.scenario
        self.parts = parts
        self.dumper = dumper
        self.agents = agents
        self.tracker = tracker
        self.say = say
        self.deadline = t_started + self.sc.timeouts.run_s
        self.events: list[dict[str, Any]] = []
        self.first_exit: float | None = None
        self.failure_logged = False
        self.killed: str | None = None
        self.hang_time: float | None = None
        self.progress_ref = time.time()
        self.next_dump = 0.0
        self._ranks_sig: tuple[Any, ...] = ()
        self._mtimes: dict[int, float] = {}
        self._failed_attempts: set[int] = set()
        self._finished_pids: set[int] = set()

    def poll(self) -> bool:
        """Look at everything once; return True when the run is over (or must be ended)."""
        now = time.time()
        self.tracker.refresh()
        codes = {n: p.poll() for n, p in self.agents.items()}
        procs, stepping, all_up = self._scan_ranks(now)
        for c in codes.values():
            if c is not None and self.first_exit is None:
                self.first_exit = now
            if c not in (None, 0) and not self.failure_logged:
                # The job failed without a rank death seen first (e.g. before any rank started).
                self.failure_logged = True
                self.events.append({"event": "failure", "time": now, "source": "agent_exit", "exit_code": c})
        if all(c is not None for c in codes.values()):
            return True
        if self.first_exit is not None and now - self.first_exit > self.sc.timeouts.grace_s:
            self.say(f"[lab] {self.sc.name}: agents still running {self.sc.timeouts.grace_s:.0f} s after the first exit")
            self.killed = "grace_after_first_exit"
            return True
        if now > self.deadline:
            self.say(f"[lab] {self.sc.name}: run timeout after {self.sc.timeouts.run_s:.0f} s")
            self.killed = "run_timeout"
            return True
        self._hang_and_dumps(now, procs, stepping, all_up)
        return False

    def _scan_ranks(self, now: float) -> tuple[dict[int, RankProc], bool, bool]:
        rank_info = _read_ranks(self.parts)
        procs = _rank_procs(rank_info)
        sig = tuple(sorted((r, p.pid) for r, p in procs.items()))
        if sig != self._ranks_sig:
            self._ranks_sig = sig
            self.progress_ref = now
            self.dumper.write_ranks(procs)
        mtimes: dict[int, float] = {}
        for r in rank_info:
            with contextlib.suppress(FileNotFoundError):
                mtimes[r] = (self.parts / f"timing-rank-{r}.jsonl").stat().st_mtime
        if mtimes and mtimes != self._mtimes:
            self.progress_ref = max(self.progress_ref, max(mtimes.values()))
            self._mtimes = mtimes
        alive = {r: _alive_pid(p.pid) for r, p in procs.items()}
        all_up = len(procs) == self.plan.ranks and all(alive.values())
        # Armed once every rank has finished a step in its current attempt, and disarmed once
        # every rank has finished its last step (process exit can take seconds under load).
        last_recs = {r: _last_line(self.parts / f"timing-rank-{r}.jsonl") for r in rank_info}
        stepping = (
            all_up
            and all(
                (rec := last_recs[r]) is not None and int(rec.get("attempt", 0)) == int(d.get("attempt", 0))
                for r, d in rank_info.items()
            )
            and not all(int(rec["step"]) + 1 >= self.sc.steps for rec in last_recs.values() if rec is not None)
        )
        for r, d in sorted(rank_info.items()):
            attempt = int(d.get("attempt", 0))
            if alive[r] or attempt in self._failed_attempts or procs[r].pid in self._finished_pids:
                continue
            last = _last_line_step(self.parts / f"timing-rank-{r}.jsonl")
            if last is not None and last + 1 >= self.sc.steps:
                self._finished_pids.add(procs[r].pid)
                continue
            self._failed_attempts.add(attempt)
            self.failure_logged = True
            # Which rank died first is for the analyzers to find: the event names none.
            self.events.append({"event": "failure", "time": now, "attempt": attempt, "source": "worker_exit"})
        return procs, stepping, all_up

    def _hang_and_dumps(self, now: float, procs: dict[int, RankProc], stepping: bool, all_up: bool) -> None:
        sc, dumper = self.sc, self.dumper
        if sc.wants_dumps and stepping and self.hang_time is None and dumper.count < PRE_HANG_SNAPSHOTS:
            steps_done = [_last_line_step(self.parts / f"timing-rank-{r}.jsonl") for r in procs]
            if all(s is not None for s in steps_done):
                min_step = min(s for s in steps_done if s is not None)
                want = (dumper.count + 1) * self.plan.onset_step // (PRE_HANG_SNAPSHOTS + 1)
                if min_step >= want:
                    dumper.snapshot(procs, "before_hang")
        if self.hang_time is None and stepping and now - self.progress_ref > sc.timeouts.hang_detect_s + sc.planned_pause_s:
            self.hang_time = now
            self.events.append(
                {
                    "event": "hang_detected",
                    "time": now,
                    "last_progress_time": self.progress_ref,
                    "no_progress_s": round(now - self.progress_ref, 3),
                }
            )
            self.say(f"[lab] {sc.name}: no step for {now - self.progress_ref:.1f} s: hang detected")
            self.next_dump = now
            if sc.wants_dumps:  # every rank's Flight Recorder thread writes its dump (train.py)
                with contextlib.suppress(OSError):
                    (self.parts / FR_REQUEST).write_text(str(now))
        if (
            sc.wants_dumps
            and self.hang_time is not None
            and all_up
            and dumper.count < PRE_HANG_SNAPSHOTS + HANG_SNAPSHOTS
            and now >= self.next_dump
        ):
            dumper.snapshot(procs, "during_hang")
            self.next_dump = time.time() + sc.timeouts.dump_interval_s


def _torchrun_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "torchrun"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "torch.distributed.run"]


@dataclass
class _Outcome:
    """What watching the agents gave: how the run ended and what the runner did about it."""

    status: str
    exit_codes: dict[str, int | None]
    killed: str | None
    hang_time: float | None


def _node_cmd(plan: _Plan, i: int, port: int, run_id: str, log_dir: Path, cfg_path: Path) -> list[str]:
    """The torchrun command line of simulated node ``i``."""
    sc = plan.scenario
    rdzv_read_s = max(10, int(sc.timeouts.collective_s))
    pin = ["taskset", "--cpu-list", ",".join(map(str, plan.job_cpus))] if plan.job_cpus else []
    return [
        *pin,
        *_torchrun_cmd(),
        f"--nnodes={plan.nodes}",
        f"--nproc-per-node={plan.ranks // plan.nodes}",
        f"--node-rank={i}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        f"--rdzv-id={run_id}",
        f"--rdzv-conf=is_host={'true' if i == 0 else 'false'},join_timeout=60,read_timeout={rdzv_read_s}",
        f"--max-restarts={sc.max_restarts}",
        "--monitor-interval=0.5",
        f"--log-dir={log_dir}",
        "--redirects=3",
        "--tee=3",
        str(TRAIN_SCRIPT),
        "--config",
        str(cfg_path),
    ]


def _node_env(sc: Scenario, node: str) -> dict[str, str]:
    """The environment of a torchrun agent: ours without a launcher's rank variables, plus the lab's."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update({"OMP_NUM_THREADS": "1", "LAB_NODE": node, "PYTHONUNBUFFERED": "1"})
    if sc.wants_dumps:
        env["TORCH_FR_BUFFER_SIZE"] = str(FR_BUFFER)
    if sc.max_restarts > 0:
        # torch 2.x reuses the agent's shared TCPStore across restart rounds without a
        # key prefix, so restarted gloo workers read the dead workers' addresses
        # ("Gloo connectFullMesh failed ... Connection refused"). Opt out of the sharing.
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    return env


def _launch_and_watch(
    plan: _Plan,
    out_dir: Path,
    work: Path,
    dumper: StackDumper,
    runner_events: list[dict[str, Any]],
    say: Callable[[str], None],
    stack: contextlib.ExitStack,
    live: tuple[LiveService, str] | None = None,
) -> tuple[_Outcome, _BrokenFs | None]:
    """Start the agents, watch them until the run is over, and end them.

    Everything opened here (the broken file system, the port blocker, the console files, the process
    tree) is registered on ``stack``, which the caller closes on every exit path: the processes are
    ended first, then the files closed, the socket closed, the file system restored.
    """
    sc = plan.scenario
    parts = work / "parts"
    broken: _BrokenFs | None = None
    if isinstance(sc.fault, CheckpointWriteFault):
        broken = _prepare_broken_fs(sc.fault, work / "ckpt-shared", plan.onset_step)
        stack.callback(broken.restore)
    port = free_port()
    if sc.fault.kind == "rendezvous_port_in_use":
        blocker = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        blocker.bind(("0.0.0.0", port))
        blocker.listen(1)
    fault_params = sc.fault.model_dump()
    if broken is not None and broken.drop_privileges:
        fault_params["drop_privileges"] = True
    cfg = {
        "scenario": sc.name,
        "parts_dir": str(parts),
        "ckpt_dir": str(work / "ckpt"),
        "fault": fault_params,
        "faulty_rank": plan.faulty_rank,
        "onset_step": plan.onset_step,
        "steps": sc.steps,
        "seed": plan.seed,
        "batch_size": sc.batch_size,
        "hidden": sc.hidden,
        "num_workers": sc.num_workers,
        "collective_timeout_s": sc.timeouts.collective_s,
        "ckpt_every": sc.ckpt_every,
        "ckpt_pause_s": sc.ckpt_pause_s,
        "eval_every": sc.eval_every,
        "eval_s": sc.eval_s,
        "fault_ckpt_dir": str(broken.path) if broken else None,
        "fault_on_restart": sc.fault_on_restart,
        "jitter_s": sc.jitter_s,
        # fail-slow runs also trace their collectives (per-rank wait for the last peer, comm_wait_s)
        "trace_comm": sc.failure_mode == FailureMode.FAIL_SLOW,
        "tp_size": sc.tp_size,
        # hang runs keep a Flight Recorder and dump it into <run>/fr/ when the hang is detected
        "fr_dir": str(out_dir / "fr") if sc.wants_dumps else None,
        "fr_request": str(parts / FR_REQUEST),
    }
    cfg_path = work / "config.json"
    cfg_path.write_text(json.dumps(cfg, indent=2))

    run_id = f"lab{uuid.uuid4().hex[:8]}"
    nodes = [f"node{i}" for i in range(plan.nodes)]
    consoles = {node: stack.enter_context(open(out_dir / f"console_{node}.log", "wb"))  # noqa: SIM115 - the stack closes
                for node in nodes}
    tracker = ProcessTracker()
    stack.callback(tracker.terminate_all)  # nothing we started may outlive the run
    agents: dict[str, subprocess.Popen[bytes]] = {}
    for i, node in enumerate(nodes):
        log_dir = out_dir / "logs" / node
        log_dir.mkdir(parents=True, exist_ok=True)
        cmd = _node_cmd(plan, i, port, run_id, log_dir, cfg_path)
        if live is not None:  # the node's agent wraps its torchrun (diag watch -- torchrun ...)
            fr_dir = out_dir / "fr" if sc.wants_dumps else None  # where hang runs' ranks write Flight Recorder dumps
            cmd = live[0].agent_cmd(live[1], node, log_dir, out_dir / "watch" / node, parts, fr_dir) + cmd
        proc = subprocess.Popen(
            cmd, stdout=consoles[node], stderr=subprocess.STDOUT,
            env=_node_env(sc, node), start_new_session=True, cwd=str(out_dir),
        )
        agents[node] = proc
        tracker.add_root(proc)
        if i == 0 and plan.nodes > 1:
            time.sleep(0.5)  # node0 hosts the rendezvous store
    t_started = time.time()
    runner_events.append({"event": "started", "time": t_started, "nodes": plan.nodes, "ranks": plan.ranks})
    say(f"[lab] {sc.name}: {plan.ranks} ranks on {plan.nodes} node(s), port {port}, out {out_dir}")

    mon = _Monitor(plan, parts, dumper, agents, tracker, say, t_started)
    host_cpu = HostCpuSampler(out_dir / "host_cpu.jsonl", tracker) if sc.failure_mode == "fail_slow" else None
    while not mon.poll():
        if host_cpu is not None:
            host_cpu.sample()
        time.sleep(POLL_S)
    if host_cpu is not None:
        host_cpu.write()
    runner_events += mon.events
    if mon.killed:
        tracker.terminate_all()
    exit_codes = {n: p.poll() for n, p in agents.items()}
    if mon.killed == "run_timeout":
        status = "timeout"
        if not mon.failure_logged:
            runner_events.append({"event": "failure", "time": time.time(), "source": "run_timeout"})
    else:
        status = "succeeded" if all(c == 0 for c in exit_codes.values()) else "failed"
    return _Outcome(status, exit_codes, mon.killed, mon.hang_time), broken


def run_scenario(
    scenario: Scenario,
    out_dir: Path,
    *,
    ranks: int | None = None,
    faulty_rank: int | None = None,
    seed: int = 0,
    nodes: int | None = None,
    onset_step: int | None = None,
    force_dump_fallback: bool = False,
    keep_work: bool = False,
    echo: Callable[[str], None] | None = None,
    live: LiveService | None = None,
    job_cpus: tuple[int, ...] | None = None,
) -> RunResult:
    """Run ``scenario`` once into ``out_dir`` (which must be empty or absent) and capture it.

    ``ranks``, ``faulty_rank``, ``nodes`` and ``onset_step`` override the scenario's defaults. ``job_cpus``: pin
    every node's torchrun and its ranks to these CPUs (``taskset``, Linux), leaving the others to the runner, the
    service and the agents, as on a cluster node where the job has its cores to itself.
    ``force_dump_fallback`` uses faulthandler instead of py-spy; ``keep_work`` keeps ``.lab/`` (which
    is otherwise removed on every exit path, an error included: it holds the ground truth). Raises
    :class:`~diag_service.lab.LabUnavailable` if torch is not installed, ``ValueError`` for a plan out
    of range, ``FileExistsError`` for a non-empty ``out_dir``.
    """
    require_lab()
    say = echo or (lambda _m: None)
    plan = _plan(scenario, ranks, faulty_rank, seed, nodes, onset_step)
    if job_cpus:
        if shutil.which("taskset") is None:
            raise ValueError("job_cpus needs the taskset command (util-linux)")
        plan.job_cpus = tuple(job_cpus)
    out_dir = out_dir.resolve()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    t_submit = time.time()
    runner_events: list[dict[str, Any]] = [{"event": "submitted", "time": t_submit, "scenario_run": out_dir.name}]
    work = out_dir / WORK_DIR
    parts = work / "parts"
    dumper = StackDumper(out_dir / "dumps", parts, force_fallback=force_dump_fallback)
    sc = plan.scenario
    with contextlib.ExitStack() as keep:
        if not keep_work:
            keep.callback(shutil.rmtree, work, ignore_errors=True)
        parts.mkdir(parents=True)
        with contextlib.ExitStack() as run:
            live_job = (live, live.job_id(out_dir.name)) if live is not None else None
            outcome, broken = _launch_and_watch(plan, out_dir, work, dumper, runner_events, say, run, live_job)
        t_end = time.time()
        runner_events.append({"event": "finished", "time": t_end, "status": outcome.status, "exit_codes": outcome.exit_codes})
        truth = _finalize(out_dir, plan, parts, runner_events, dumper, broken, _started_time(runner_events))
        if live_job is not None:
            got = live_job[0].collect(live_job[1], truth.get("onset_time"), out_dir)
            say(f"[lab] {sc.name}: live: detected after {got['detect_delay_s']} s, first diagnosis after "
                f"{got['first_diagnosis_delay_s']} s")
        run_info = {
            "scenario": sc.name,
            "status": outcome.status,
            "exit_codes": outcome.exit_codes,
            "submitted": t_submit,
            "ended": t_end,
            "duration_s": round(t_end - t_submit, 3),
            "ranks": plan.ranks,
            "nodes": plan.nodes,
            "seed": plan.seed,
            "hang_detected": outcome.hang_time is not None,
            "killed_by_runner": outcome.killed,
            "snapshots": dumper.count,
            "dump_method": dumper.method if dumper.count else None,
            "dump_fallback_reason": dumper.fallback_reason if dumper.count else None,
            "torch_launcher": " ".join(_torchrun_cmd()),
        }
        (out_dir / "run.json").write_text(json.dumps(run_info, indent=2) + "\n")
        # what `diag diagnose <run dir>` must not read: the ground truth and the lab's own instrumentation
        (out_dir / ".diagignore").write_text("# lab ground truth and instrumentation, not logs\n" + "\n".join(NOT_LOGS) + "\n")
    say(f"[lab] {sc.name}: {outcome.status} in {t_end - t_submit:.1f} s")
    return RunResult(
        out_dir,
        sc.name,
        outcome.status,
        outcome.exit_codes,
        round(t_end - t_submit, 3),
        outcome.hang_time is not None,
        dumper.count,
        run_info["dump_method"],
        truth,
    )


def _started_time(events: list[dict[str, Any]]) -> float:
    """Time of the ``started`` event (else of ``submitted``), unix seconds."""
    for e in events:
        if e["event"] == "started":
            return float(e["time"])
    return float(events[0]["time"])


def _alive_pid(pid: int) -> bool:
    try:
        return _running(psutil.Process(pid))
    except psutil.Error:
        return False


def _rank_procs(rank_info: dict[int, dict[str, Any]]) -> dict[int, RankProc]:
    return {r: RankProc(str(d["node"]), int(d["pid"]), int(d["local_rank"])) for r, d in sorted(rank_info.items())}


def _finalize(
    out_dir: Path,
    plan: _Plan,
    parts: Path,
    runner_events: list[dict[str, Any]],
    dumper: StackDumper,
    broken: _BrokenFs | None,
    t_started: float,
) -> dict[str, Any]:
    """Merge the per-rank feeds and write ``timing.jsonl``, ``events.jsonl``, ``truth.json``."""
    sc = plan.scenario
    rank_info = _read_ranks(parts)
    dumper.write_ranks(_rank_procs(rank_info))
    if dumper.count:
        dumper.write_index()

    timing: list[dict[str, Any]] = []
    events = list(runner_events)
    for r in range(plan.ranks):
        timing += read_jsonl(parts / f"timing-rank-{r}.jsonl")[0]  # a rank killed mid-line leaves a cut last line
        events += read_jsonl(parts / f"events-rank-{r}.jsonl")[0]
    timing.sort(key=lambda d: (d.get("start", 0.0), d.get("rank", 0)))
    events.sort(key=lambda d: d.get("time", 0.0))
    with open(out_dir / "timing.jsonl", "w", encoding="utf-8") as f:
        for rec in timing:
            f.write(json.dumps(rec) + "\n")
    with open(out_dir / "events.jsonl", "w", encoding="utf-8") as f:
        for rec in events:
            f.write(json.dumps(rec) + "\n")

    fault_recs = {int(p.stem.split("-")[-1]): json.loads(p.read_text()) for p in parts.glob("fault-rank-*.json")}
    onset_time: float | None = None
    onset_step: int | None = plan.onset_step
    if sc.fault.kind == "rendezvous_port_in_use":
        onset_time, onset_step = t_started, None
    elif isinstance(sc.fault, NoFault):
        onset_step = None
    elif fault_recs:
        first = min(fault_recs.values(), key=lambda d: d["time"])
        onset_time, onset_step = float(first["time"]), int(first["step"])
    faulty_node: str | None = None
    if plan.faulty_rank is not None and plan.faulty_rank in rank_info:
        faulty_node = str(rank_info[plan.faulty_rank]["node"])
    elif sc.fault.kind == "rendezvous_port_in_use":
        faulty_node = "node0"
    second = getattr(sc.fault, "second_rank_offset", None)
    if sc.fault.per_rank and second is not None and plan.faulty_rank is not None:
        affected = sorted({plan.faulty_rank, (plan.faulty_rank + second) % plan.ranks})
    elif sc.fault.per_rank:
        affected = [plan.faulty_rank]
    elif sc.fault.kind in ("none", "rendezvous_port_in_use"):
        affected = []
    else:
        affected = list(range(plan.ranks))
    measured = _measure_slowdown(timing, plan) if sc.failure_mode == "fail_slow" else None
    slowdown = sc.nominal_slowdown
    if slowdown is None and measured is not None:
        slowdown = measured.get("step_time_ratio")
    truth: dict[str, Any] = {
        "scenario": sc.name,
        "description": sc.description,
        "failure_mode": str(sc.failure_mode),
        "category": str(sc.category),
        "fault": sc.fault.model_dump(),
        "faulty_rank": plan.faulty_rank,
        "faulty_node": faulty_node,
        "affected_ranks": affected,
        "onset_step": onset_step,
        "onset_time": onset_time,
        "slowdown_factor": slowdown,
        "control": isinstance(sc.fault, NoFault),
        "fault_fired": bool(fault_recs) or sc.fault.kind == "rendezvous_port_in_use",
        "ranks": plan.ranks,
        "nodes": plan.nodes,
        "seed": plan.seed,
    }
    if broken is not None:
        truth["fault_method"] = broken.method
    if measured is not None:
        truth["measured"] = measured
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def _measure_slowdown(timing: list[dict[str, Any]], plan: _Plan) -> dict[str, Any]:
    """Median step time after vs before the onset (all ranks; the first 3 steps are warm-up)."""
    s0 = plan.onset_step

    def med(vals: list[float]) -> float | None:
        return statistics.median(vals) if vals else None

    before = [d["end"] - d["start"] for d in timing if 3 <= d["step"] < s0]
    after = [d["end"] - d["start"] for d in timing if d["step"] >= s0]
    out: dict[str, Any] = {"median_step_s_before": med(before), "median_step_s_after": med(after)}
    b, a = out["median_step_s_before"], out["median_step_s_after"]
    out["step_time_ratio"] = round(a / b, 3) if a and b else None
    if plan.faulty_rank is not None:
        fb = med([d["compute_s"] for d in timing if d["rank"] == plan.faulty_rank and 3 <= d["step"] < s0])
        fa = med([d["compute_s"] for d in timing if d["rank"] == plan.faulty_rank and d["step"] >= s0])
        out["faulty_compute_ratio"] = round(fa / fb, 3) if fa and fb else None
    return out


# --------------------------------------------------------------------------- suite


@dataclass
class SuiteItem:
    """One planned run of a suite."""

    index: int
    scenario: str
    faulty_rank: int | None
    onset_step: int
    seed: int
    ranks: int
    nodes: int


def plan_suite(
    scenarios: dict[str, Scenario],
    runs: int,
    seed: int = 0,
    ranks: int | None = None,
    nodes: int | None = None,
) -> list[SuiteItem]:
    """Cycle through ``scenarios`` (shuffled) for ``runs`` runs with random faulty ranks and onsets."""
    rng = random.Random(seed)
    names = sorted(scenarios)
    items: list[SuiteItem] = []
    order: list[str] = []
    for i in range(runs):
        if not order:
            order = names[:]
            rng.shuffle(order)
        sc = scenarios[order.pop()]
        n = ranks if ranks is not None else sc.ranks
        nn = nodes if nodes is not None else sc.nodes
        if n % nn:
            nn = 1
        lo, hi = sc.onset_range or (
            max(0, sc.onset_step - sc.onset_step // 4),
            min(sc.steps - 1, sc.onset_step + sc.onset_step // 4),
        )
        fr = rng.randrange(n) if sc.fault_is_per_rank else None
        items.append(SuiteItem(i, sc.name, fr, rng.randint(lo, hi), rng.randrange(1 << 30), n, nn))
    return items


def run_suite(
    scenarios: dict[str, Scenario],
    out_dir: Path,
    runs: int,
    seed: int = 0,
    ranks: int | None = None,
    nodes: int | None = None,
    echo: Callable[[str], None] | None = None,
    live: LiveService | None = None,
) -> list[dict[str, Any]]:
    """Run ``runs`` planned runs into ``out_dir/<NNN>-<scenario>/``; write ``out_dir/suite.jsonl``.

    ``out_dir`` must be empty or absent. Raises :class:`~diag_service.lab.LabUnavailable` before any run
    if torch is not installed (a run's own errors are recorded in its row).
    """
    require_lab()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    index_path = out_dir / "suite.jsonl"
    for item in plan_suite(scenarios, runs, seed, ranks, nodes):
        run_dir = out_dir / f"{item.index:03d}-{item.scenario}"
        row: dict[str, Any] = {"run_dir": run_dir.name, **asdict(item)}
        try:
            res = run_scenario(
                scenarios[item.scenario],
                run_dir,
                ranks=item.ranks,
                faulty_rank=item.faulty_rank,
                seed=item.seed,
                nodes=item.nodes,
                onset_step=item.onset_step,
                echo=echo,
                live=live,
            )
            row.update(status=res.status, duration_s=res.duration_s)
        except Exception as exc:  # noqa: BLE001 - one broken run must not stop the suite
            row.update(status="error", error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
        with open(index_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    return rows


def iter_rank_logs(out_dir: Path, rank: int) -> Iterator[Path]:
    """Paths of the torchrun ``stdout.log``/``stderr.log``/``error.json`` files of global ``rank``.

    Uses ``dumps/ranks.json`` to map the rank to its node and local rank; yields every attempt.
    """
    info = json.loads((out_dir / "dumps" / "ranks.json").read_text())[str(rank)]
    base = out_dir / "logs" / info["node"]
    for attempt_dir in sorted(base.glob("*/attempt_*")):
        d = attempt_dir / str(info["local_rank"])
        if d.is_dir():
            yield from sorted(d.iterdir())
