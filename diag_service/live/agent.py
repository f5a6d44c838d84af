"""The node agent behind ``diag watch``: beside the workers of one job on one node, it follows their logs,
notices a failure, a hang or a restart within seconds, takes stack samples while the job is stuck, and
sends everything to the service as :class:`~diag_service.live.contract.AgentBatch` es (spooled to disk
first: nothing is lost while the service is away).

What it watches (no change to the training script):

* **logs**: every log file under ``log_dir`` (torchrun's ``--log-dir`` tree, consoles, Slurm ``.out``)
  and, when it launches the job itself, the launcher's own console (``console/console.log``);
* **progress**: step lines (``step 120``, ``iteration 100/500000``, tqdm bars ``450/1000 [01:30<``) and a
  timing feed (``timing*.jsonl``, the lab's format, forwarded as step records);
* **processes**: the launcher (``pid``, or the command it started) and its worker processes (psutil),
  each worker's global rank read from its ``RANK`` environment variable.

Decisions (times in seconds, from :class:`WatchSettings`):

* **fail-stop**: the first line of a fatal kind (:data:`FATAL_LINE`: a traceback, a worker's failure report
  by torchrun, an NCCL error, a watchdog timeout, CUDA OOM, a fatal signal) or a launcher exiting with a
  non-zero status gives one ``failure`` event; every file's new lines are sent at once.
* **fail-hang**: no new step on any rank for ``max(hang_floor_s, hang_factor x p99 step interval)``
  (``x hang_phase_factor`` after a checkpoint or evaluation line, until the next step) gives
  ``hang_detected`` with the last step's time as onset, and a stack sample of every local worker every
  ``stack_every_s`` while it lasts (at most ``max_snapshots``). No hang is declared before the first step
  unless ``startup_timeout_s`` is set.
* **Flight Recorder**: with ``fr_dir``, each of this node's ranks' dump files there (``nccl_trace_rank_<R>``) is
  sent whole once it stopped changing (the hang analysis then sees the collectives, not only the stacks);
* **lifecycle**: ``started``, ``first_step``, ``progress`` (every ``progress_every_s``), ``checkpoint_saved``,
  ``restart`` (a new torchrun ``attempt_<n>`` folder), ``finished`` (the launcher's exit), ``heartbeat``.

**Heartbeat**: every ``heartbeat_s``, which is only the first value: each acknowledgement of the service
carries the interval it expects (``BatchAck.heartbeat_s``, its ``live.heartbeat_s``: an agent silent for
``live.stale_after`` of them is shown stale), and the agent adopts it, so the two cannot disagree.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diag_service.fsutil import read_regular
from diag_service.ingest.bundle import attribute_path
from diag_service.jsonl import iter_jsonl
from diag_service.live.contract import (
    MAX_BATCH_CHARS,
    MAX_BATCH_ITEMS,
    MAX_FR_BYTES,
    MAX_TEXT_CHARS,
    AgentBatch,
    FrDump,
    LiveEvent,
    LiveEventKind,
    LogChunk,
    StackSample,
)
from diag_service.live.spool import Sender, SendFn, Spool
from diag_service.live.tail import Chunk, LogTailer

log = logging.getLogger("diag.watch")

#: Lines that mean a worker (or the job) failed: Python tracebacks, torchrun's failure report, NCCL and
#: c10d errors, the NCCL watchdog's timeout, CUDA OOM, fatal signals and crashes.
FATAL_LINE = re.compile(
    r"Traceback \(most recent call last\)|ChildFailedError|failed \(exitcode: -?\d+\) local_rank"
    r"|Signal \d+ \(SIG\w+\) received by PID|[Ww]atchdog caught collective operation timeout"
    r"|\] Caught collective operation timeout"
    r"|NCCL error|nccl(?:System|Internal|Remote|UnhandledCuda|InvalidUsage)Error|CUDA out of memory"
    r"|OutOfMemoryError|Segmentation fault|core dumped|Fatal Python error|CUDA error: |Bus error"
)
#: torchrun's elastic agent, once its own workers succeeded, waits at the exit barrier for the other nodes'
#: agents (``_exit_barrier`` in ``torch/distributed/elastic/agent/server/api.py``); when the node hosting the c10d
#: store has already exited it logs this error with the store's traceback and still exits 0: no failure.
EXIT_BARRIER_ERROR = re.compile(r"Error waiting on exit barrier")
#: Progress: a step/iteration number, or a tqdm bar's count ("450/1000 [01:30<01:50"). A plural word counts only
#: before a count out of a total ("steps 40/100"): "steps=80" on a start-up line is the run's length (a new user's
#: trial 40, r09: a hang reported at "step 80" of a job stuck at step 25), and "Steps:  10%|" a bar's percentage.
STEP_LINE = re.compile(
    r"(?:\b(?:[Ii]teration|[Ii]ter|[Ss]tep|global_step)(?:s(?=\s*[:#]?\s*\[?\s*\d{1,12}\s*/))?(?: at)?\s*[:=#]?\s*"
    r"\[?\s*(\d{1,12})\b(?!%))"
    r"|(?:\b(\d{1,12})/\d{1,12} \[\d+:\d\d(?::\d\d)?<)"
)
#: Checkpoint and evaluation phases: training pauses without a step (the hang timeout is stretched).
PHASE_LINE = re.compile(r"(?i)\b(?:sav(?:e|ing)\w*\s+(?:\w+\s+)?checkpoint|checkpoint\w*\s+sav|evaluat\w*|validat\w*)")
CHECKPOINT_SAVED = re.compile(r"(?i)(?:saved|wrote|finished saving)\s+(?:\w+\s+)?checkpoint|checkpoint\s+(?:\w+\s+)?saved")
#: The step in a checkpoint's own name on a save line (``step_50.pt``, HF's ``checkpoint-500``, DeepSpeed's
#: ``global_step500``, Megatron's ``iter_0001000``, ``ckpt_e3_s1200``-style ``s``/``it`` suffixes are not read).
CHECKPOINT_NAME_STEP = re.compile(r"(?i)(?:\bstep|checkpoint|global_step|\biter)[_-]?(\d{1,12})(?=\b|[._/])")
#: Save lines that do not name their step and arrive within this many seconds of a reported save are the same save
#: written by another rank (every rank's logger prints it; trial 44 r14 reported steps 50 and 51 for one save).
SAVE_SAME_S = 15.0
RANK_IN_LINE = re.compile(r"\[(?:default|rank)(\d{1,6})\]|\brank[ =:](\d{1,6})\b")
FEED_NAME = re.compile(r"(?i)(?:^|/)timing[^/]*\.jsonl$")
#: Seconds by which a repeated acknowledgement's phase end may differ from the one already known (the remaining time
#: is rounded to milliseconds and measured on the service's clock when it acknowledges, a send's latency earlier).
PHASE_END_SLACK_S = 2.0
#: A step read this long after a reported phase was adopted ends it (a poll reads lines within 0.5 s of their writing,
#: and the report reaches this agent through another agent's poll, the service and an acknowledgement).
PHASE_STEP_AFTER_S = 1.0
#: The longest job-wide phase (seconds) adopted from one acknowledgement: a checkpoint save or evaluation
#: pass that another agent reported (the service's answer is bounded by its own settings too).
MAX_PHASE_S = 3600.0
#: The longest heartbeat interval adopted from the service (its own bound on ``live.heartbeat_s``).
MAX_HEARTBEAT_S = 3600.0
#: Seconds between two listings of the launcher's workers. A listing walks the launcher's process tree and
#: reads every descendant's environment (psutil: /proc reads, several per process, and a node's 8 workers
#: have dozens of DataLoader and compile children), which at every 0.5 s poll would be most of the agent's own
#: CPU. Workers only change when torchrun (re)starts them, and a start writes new log files: a new file, a
#: restart, or a hang with no worker known lists them at once, otherwise every this many seconds.
WORKER_SCAN_S = 5.0


@dataclass
class WatchSettings:
    """What the agent watches and how it decides (seconds unless said)."""

    job_id: str
    node: str = field(default_factory=lambda: re.sub(r"[^A-Za-z0-9._:@-]", "-", socket.gethostname())[:128] or "node")
    log_dir: Path | None = None
    #: A folder of per-rank timing feeds (``timing*.jsonl``) written outside the logs; only this node's
    #: records (their ``node`` field, when they have one) are forwarded, as step records, not as log text.
    feed_dir: Path | None = None
    #: Where the job writes Flight Recorder dumps (the folder of ``TORCH_FR_DUMP_TEMP_FILE``): each of this
    #: node's ranks' dumps is sent once it has stopped changing.
    fr_dir: Path | None = None
    pid: int | None = None
    state_dir: Path = Path(".diag-watch")
    poll_s: float = 0.5
    batch_s: float = 1.0
    #: The first heartbeat interval; the service's acknowledgements replace it with the one it expects.
    heartbeat_s: float = 5.0
    progress_every_s: float = 30.0
    hang_floor_s: float = 60.0
    hang_factor: float = 10.0
    hang_phase_factor: float = 4.0
    startup_timeout_s: float | None = None
    stack_every_s: float = 5.0
    max_snapshots: int = 12
    pyspy_timeout_s: float = 10.0


@dataclass
class _Progress:
    max_step: int = -1
    last_time: float | None = None
    first_time: float | None = None
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=256))
    in_phase: bool = False
    phase_time: float | None = None  # the poll in which the phase line was read

    def p99(self) -> float | None:
        if len(self.intervals) < 3:
            return None
        xs = sorted(self.intervals)
        return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


@dataclass
class WorkerProc:
    pid: int
    rank: int
    local_rank: int | None


class Agent:
    """One agent: :meth:`step` does one round of watching (tests drive it with a fake clock); :meth:`run`
    loops until the watched launcher exits or :meth:`stop` is called.

    ``send``: how batches reach the service (None: they stay in the spool). ``clock``: unix seconds.
    ``stack_dumper(pid) -> (fmt, text)``: one stack sample of a process (py-spy by default).
    """

    def __init__(self, cfg: WatchSettings, send: SendFn | None = None, *, clock: Callable[[], float] = time.time,
                 stack_dumper: Callable[[int], tuple[str, str]] | None = None,
                 launcher: subprocess.Popen[bytes] | None = None, pump: threading.Thread | None = None) -> None:
        self.cfg = cfg
        self.clock = clock
        self.agent_id = f"{cfg.node}:{os.getpid()}"[:128]
        self.prefix = f"{time.time_ns():020d}"
        self.seq = 0
        self.spool = Spool(cfg.state_dir / "spool")
        self.heartbeat_s = cfg.heartbeat_s  # adopted from the service's acknowledgements (_on_ack)
        self.job_phase_until = 0.0  # unix seconds: a phase another agent of the job reported (_on_ack)
        # the end of a reported phase that this node's steps have already outlived: the service repeats the phase's
        # remaining seconds in every acknowledgement until its end, and those repeats are the same phase
        self.job_phase_over_until = 0.0
        self.job_phase_adopted = 0.0  # when the latest reported phase was adopted (this agent's clock)
        self.withdraw_hang = False  # set by _on_ack: the hang declared was a wait for that phase
        self.sender = Sender(self.spool, send, on_ack=self._on_ack) if send is not None else None
        self.launcher = launcher
        self.pump = pump
        self.pid = launcher.pid if launcher is not None else cfg.pid
        self.roots: dict[str, LogTailer] = {}
        if cfg.log_dir is not None:
            self.roots["logs"] = LogTailer(cfg.log_dir)
        if cfg.feed_dir is not None:
            self.roots["feeds"] = LogTailer(cfg.feed_dir)
        self.console_dir = cfg.state_dir / "console"
        if launcher is not None:
            self.roots["console"] = LogTailer(self.console_dir)
        self.stack_dumper = stack_dumper or _pyspy_dumper(cfg.pyspy_timeout_s)
        self.progress = _Progress()
        self.events: list[LiveEvent] = []
        self.logs: list[LogChunk] = []
        self.stacks: list[StackSample] = []
        self.steps: list[dict[str, Any]] = []
        self.feed_seen = False  # a timing feed gives this node's step records; step lines then do not
        from diag_service.slow.logs import SAVE_DURATION, StepLineReader  # numpy and the log formats: once an agent runs

        self.step_lines = StepLineReader()  # step records from the logs' step lines (their stated time per step)
        self._save_took = SAVE_DURATION  # the duration a save line states for itself ("... step_50.pt in 4.93s")
        self.fr: list[FrDump] = []
        self._fr_seen: dict[str, tuple[int, int]] = {}  # name -> (size, mtime_ns) last polled
        self._fr_sent: dict[str, tuple[int, int]] = {}
        self.urgent = False
        self.failed = False
        self.hung = False
        self.finished = False
        self.exitcode: int | None = None
        self.snapshots = 0
        self.next_stack = 0.0
        self.attempt = 0
        self.last_flush = 0.0
        self.last_heartbeat = 0.0
        self.started = clock()
        self.last_progress_event = self.started
        self.progress_sent = -1
        self.workers: dict[int, WorkerProc] = {}
        self.last_worker_scan = -float("inf")
        self.rescan_workers = True  # a new log file, a restart or a hang without workers: list them now
        self._feed_partial: dict[str, str] = {}
        # the logger prefix of torchrun's last exit-barrier error record (its lines share it), and whether the
        # line read just before was that record's first (a log format without a prefix)
        self._barrier_prefix: str | None = None
        self._saved_steps: deque[int] = deque(maxlen=16)  # steps of the latest checkpoints a line named
        self._last_unnamed_save = -float("inf")  # when the latest save whose line named no step was reported
        self._after_barrier = False
        self._stop = threading.Event()
        self._event(LiveEventKind.STARTED, self.started, pid=self.pid)

    # ------------------------------------------------------------------ loop
    def run(self) -> int:
        """Watch until the launcher exits (or :meth:`stop`); returns the launcher's exit code (0 without one)."""
        if self.sender is not None:
            self.sender.start()
        for tailer in self.roots.values():
            tailer.watch(self._stop)
        try:
            while not self._stop.is_set():
                self.step()
                if self.finished:
                    break
                self._stop.wait(self.cfg.poll_s)
        finally:
            self.flush(force=True)
            if self.sender is not None:
                self.sender.stop()
                self.sender.join()
        return self.exitcode or 0

    def stop(self) -> None:
        self._stop.set()

    def step(self) -> None:
        """One round: read new lines, check the processes, decide, flush when due."""
        now = self.clock()
        chunks = [(name, chunk) for name, tailer in self.roots.items() for chunk in tailer.poll()]
        if any(chunk.offset == 0 for _, chunk in chunks):  # a new (or restarted) file: its worker may be new too
            self.rescan_workers = True
            self._check_workers(now)  # before its lines, which are then attributed to the worker's rank
        for name, chunk in chunks:
            self._on_chunk(name, chunk, now)
        self._check_processes(now)
        if self.cfg.fr_dir is not None:
            self._check_fr(now)
        self._check_hang(now)
        if now - self.last_heartbeat >= self.heartbeat_s:
            self.last_heartbeat = now
            self._event(LiveEventKind.HEARTBEAT, now)
        if (not self.finished and self.progress.max_step > self.progress_sent
                and now - self.last_progress_event >= self.cfg.progress_every_s):
            self.last_progress_event = now
            self.progress_sent = self.progress.max_step
            self._event(LiveEventKind.PROGRESS, now, step=self.progress.max_step)
        if self.urgent or now - self.last_flush >= self.cfg.batch_s:
            self.flush()

    def _on_ack(self, ack: dict[str, Any]) -> None:
        """An acknowledgement of the service (sender thread): adopt the heartbeat interval it expects, when it
        says one (a number in (0, :data:`MAX_HEARTBEAT_S`]; an older service says none)."""
        v = ack.get("heartbeat_s")
        if isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= MAX_HEARTBEAT_S and v != self.heartbeat_s:
            log.info("heartbeat every %g s, as the service expects (was %g s)", v, self.heartbeat_s)
            self.heartbeat_s = float(v)
        ph = ack.get("job_phase_s")
        if isinstance(ph, int | float) and not isinstance(ph, bool) and 0 < ph <= MAX_PHASE_S:
            end = self.clock() + float(ph)
            if end <= self.job_phase_over_until + PHASE_END_SLACK_S:
                return  # the same phase, repeated: steps here went on after it began, so it is over
            # another node's rank is saving a checkpoint or evaluating: a stall here is waiting for it
            if end > self.job_phase_until:
                self.job_phase_adopted = self.clock()
            self.job_phase_until = max(self.job_phase_until, end)
            self.withdraw_hang = self.hung  # a hang declared meanwhile was this wait: the service held it

    # ------------------------------------------------------------------ input
    def _on_chunk(self, root: str, chunk: Chunk, now: float) -> None:
        rel = f"{root}/{chunk.rel}"
        if root == "feeds":
            if FEED_NAME.search(chunk.rel):
                self._on_feed(rel, chunk.text, now, own_node=True)
            return
        where = attribute_path(chunk.rel)  # torchrun's <run>/attempt_<n>/<local_rank>/ tree, as ingest reads it
        local_rank = where.local_rank if where.layout == "torchrun_logdir" else None
        if where.attempt is not None and where.attempt > self.attempt:
            self.attempt = where.attempt
            self._event(LiveEventKind.RESTART, now, cause=f"torchrun attempt {self.attempt}")
            self.failed = self.hung = False
            self._saved_steps.clear()  # a new attempt may save a step again
            self.snapshots = 0
            self.rescan_workers = True
        rank = self._rank_of_local(local_rank)
        self._add_log(rel, chunk, rank, local_rank)
        if FEED_NAME.search(chunk.rel):
            self._on_feed(rel, chunk.text, now)
            return
        # step lines with a time per step become step records (the service's streaming fail-slow detector), unless a
        # timing feed gives them; the launcher's console only when there are no worker logs (with --tee its lines are
        # the workers' again, and a line without a global rank marker names only a local rank)
        steps_from = self.feed_seen is False and (root != "console" or "logs" not in self.roots)
        for line in chunk.text.splitlines():
            self._on_line(line, now, rank, local_rank)
            if steps_from:  # (parse_line skips a line without a step or save word at once)
                self.steps.extend(self.step_lines.read(rel, line, rank, self.cfg.node))

    def _on_line(self, line: str, now: float, rank: int | None, local_rank: int | None) -> None:
        phase, saved = PHASE_LINE.search(line), CHECKPOINT_SAVED.search(line)
        # a phase line names the step it follows ("saving checkpoint at iteration 1000"): it is not progress
        m = None if phase or saved else STEP_LINE.search(line)
        if m:
            self._on_step(int(m.group(1) or m.group(2)), now)
        elif phase:
            entering = not self.progress.in_phase
            self.progress.in_phase, self.progress.phase_time = True, now
            if entering:  # the other nodes' ranks will wait for this one: the service tells their agents
                self._event(LiveEventKind.PHASE, now, duration=self.hang_timeout(), cause=line.strip()[:300],
                            step=self.progress.max_step if self.progress.max_step >= 0 else None)
                self.urgent = True
        if saved:
            # the step the line names ("saved checkpoint at step 39", "from iteration 1000"), else the last step read;
            # a named save already reported is the same line read again (the worker's log and the launcher's tee)
            named = STEP_LINE.search(line)
            in_name = None if named else CHECKPOINT_NAME_STEP.search(line)
            step = (int(named.group(1) or named.group(2)) if named else int(in_name.group(1)) if in_name
                    else (max(self.progress.max_step, 0) or None))
            took = self._save_took.search(line)
            duration = None if took is None else float(took.group(1)) / (1000.0 if took.group(2) == "ms" else 1.0)
            if named or in_name:
                if step not in self._saved_steps:
                    self._event(LiveEventKind.CHECKPOINT_SAVED, now, step=step, duration=duration)
                self._saved_steps.append(step)
            elif now - self._last_unnamed_save > SAVE_SAME_S:
                self._event(LiveEventKind.CHECKPOINT_SAVED, now, step=step, duration=duration)
                self._last_unnamed_save = now
        barrier = EXIT_BARRIER_ERROR.search(line)
        in_barrier_record = barrier is not None or (
            self._barrier_prefix is not None
            and (line.startswith(self._barrier_prefix) if self._barrier_prefix.strip() else self._after_barrier))
        if barrier is not None:
            self._barrier_prefix = line[:barrier.start()]
        self._after_barrier = barrier is not None
        if not self.failed and not in_barrier_record and FATAL_LINE.search(line):
            self.failed = True
            if rank is None:
                r = RANK_IN_LINE.search(line)
                rank = int(r.group(1) or r.group(2)) if r else None
            self._event(LiveEventKind.FAILURE, now, onset_time=now, rank=rank, local_rank=local_rank,
                        cause=line.strip()[:500])
            self.urgent = True

    def _on_feed(self, rel: str, text: str, now: float, own_node: bool = False) -> None:
        self.feed_seen = True
        for _n, rec in iter_jsonl(text.splitlines()):  # a line that is not a JSON object is skipped
            if own_node and rec.get("node") not in (None, self.cfg.node):
                continue
            self.steps.append(rec)
            step = rec.get("step")
            if isinstance(step, int) and rec.get("kind", "train") == "train":
                self._on_step(step, now, _record_end(rec, now))

    def _on_step(self, step: int, now: float, done: float | None = None) -> None:
        """A step read at ``now``; ``done``: when the step itself ended, where its record says (a timing feed's
        ``end``), which dates ``first_step`` (a poll sees it up to a poll interval later)."""
        p = self.progress
        if step <= p.max_step:
            return
        if p.max_step < 0:
            p.first_time = now
            self._event(LiveEventKind.FIRST_STEP, now if done is None else done, step=step)
        elif p.last_time is not None and not p.in_phase:
            p.intervals.append((now - p.last_time) / max(1, step - p.max_step))
        # a phase line read in this same poll stays in force: the files of one poll are not read in time order
        # (the step's timing record can come after the "saving checkpoint" line that followed it)
        p.max_step, p.last_time = step, now
        p.in_phase = p.in_phase and p.phase_time == now
        if self.job_phase_until > now and now >= self.job_phase_adopted + PHASE_STEP_AFTER_S:
            # a step after another node's phase was reported: the job is training again (a synchronous step needs
            # every rank), so that phase is over here; the hang timeout is the plain one from now on. (A step read
            # within PHASE_STEP_AFTER_S of the report may be one logged before the phase began.)
            self.job_phase_over_until, self.job_phase_until = self.job_phase_until, 0.0
            self._event(LiveEventKind.PROGRESS, now, step=step)  # the service ends the phase for every agent
            self.urgent = True
        if self.hung:
            self.hung = False
            log.info("progress again at step %d: the hang is over", step)

    def _add_log(self, rel: str, chunk: Chunk, rank: int | None, local_rank: int | None) -> None:
        from diag_service.redact import redact

        offset = chunk.offset
        restarted = chunk.restarted
        for piece in _split_text(chunk.text, MAX_TEXT_CHARS):
            self.logs.append(LogChunk(path=rel, offset=offset, text=redact(piece), restarted=restarted,
                                      rank=rank, local_rank=local_rank))
            offset += len(piece.encode("utf-8", "surrogatepass"))
            restarted = False

    # ------------------------------------------------------------------ processes
    def _check_processes(self, now: float) -> None:
        if self.launcher is not None:
            code = self.launcher.poll()
            if code is not None:
                self._finish(code, now)
                return
        elif self.pid is not None and not _alive(self.pid):
            self._finish(None, now)
            return
        self._check_workers(now)

    def _check_workers(self, now: float) -> None:
        """List the launcher's workers when due (every :data:`WORKER_SCAN_S`, or at once after a new log file, a
        restart, or a hang with none known); each new one is announced once."""
        if self.pid is None or not (self.rescan_workers or now - self.last_worker_scan >= WORKER_SCAN_S):
            return
        self.last_worker_scan = now
        self.rescan_workers = False
        workers = _workers(self.pid)
        for pid, w in workers.items():
            if pid not in self.workers:  # announced once: the service maps the logs' local ranks with it
                self._event(LiveEventKind.WORKER, now, rank=w.rank, local_rank=w.local_rank, pid=w.pid)
        self.workers = workers

    def _finish(self, code: int | None, now: float) -> None:
        if self.finished:
            return
        if self.pump is not None:
            self.pump.join(timeout=2.0)  # the console's last lines
        for name, tailer in self.roots.items():  # the last lines before the exit
            for chunk in tailer.poll():
                self._on_chunk(name, chunk, now)
        self.exitcode = code
        if code not in (None, 0) and not self.failed:
            self.failed = True
            self._event(LiveEventKind.FAILURE, now, onset_time=now, exitcode=code, pid=self.pid,
                        cause=f"launcher exited with status {code}")
        status = "succeeded" if code == 0 else "failed" if code is not None else "ended"
        self._event(LiveEventKind.FINISHED, now, exitcode=code, status=status)
        self.finished = True
        self.urgent = True

    def _rank_of_local(self, local_rank: int | None) -> int | None:
        if local_rank is None:
            return None
        return next((w.rank for w in self.workers.values() if w.local_rank == local_rank), None)

    def _check_fr(self, now: float) -> None:
        """Queue the Flight Recorder dumps of this node's ranks that changed and then held still for a poll."""
        import base64

        from diag_service.ingest.members import RANK_SUFFIX

        folder = self.cfg.fr_dir
        assert folder is not None
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        mine = {w.rank for w in self.workers.values()}
        for e in entries[:4096]:
            m = RANK_SUFFIX.match(e.name)
            if e.name.startswith(".") or m is None or not e.is_file(follow_symlinks=False):
                continue
            if mine and int(m.group("rank")) not in mine:
                continue
            st = e.stat(follow_symlinks=False)
            key = (st.st_size, st.st_mtime_ns)
            held = self._fr_seen.get(e.name) == key
            self._fr_seen[e.name] = key
            if not held or self._fr_sent.get(e.name) == key or not 0 < st.st_size <= MAX_FR_BYTES:
                continue
            try:
                data = read_regular(e.path, MAX_FR_BYTES + 1)
            except OSError:
                continue
            self._fr_sent[e.name] = key
            self.fr.append(FrDump(rank=int(m.group("rank")), name=e.name, time=now,
                                  data=base64.b64encode(data[:MAX_FR_BYTES]).decode("ascii")))
            self.urgent = True

    # ------------------------------------------------------------------ hang
    def hang_timeout(self) -> float | None:
        """Seconds without a new step after which the job counts as hung (None: not armed yet)."""
        p = self.progress
        if p.max_step < 0:
            return self.cfg.startup_timeout_s
        p99 = p.p99()
        base = max(self.cfg.hang_floor_s, self.cfg.hang_factor * p99) if p99 is not None else self.cfg.hang_floor_s
        in_phase = p.in_phase or self.clock() < self.job_phase_until
        return base * (self.cfg.hang_phase_factor if in_phase else 1.0)

    def _check_hang(self, now: float) -> None:
        if self.failed or self.finished:
            return
        if self.withdraw_hang and self.hung:
            self.withdraw_hang, self.hung = False, False
            log.info("hang withdrawn: another node's rank is in a checkpoint or evaluation phase")
        timeout = self.hang_timeout()
        since = self.progress.last_time if self.progress.last_time is not None else self.started
        if not self.hung and timeout is not None and now - since > timeout:
            self.hung = True
            self.snapshots = 0
            self.next_stack = now
            step = self.progress.max_step if self.progress.max_step >= 0 else None
            self._event(LiveEventKind.HANG_DETECTED, now, onset_time=since, step=step,
                        cause=f"no new step for {now - since:.0f} s (timeout {timeout:.0f} s)")
            self.urgent = True
        if self.hung and not self.workers:
            self.rescan_workers = True
            self._check_workers(now)
        if self.hung and self.snapshots < self.cfg.max_snapshots and now >= self.next_stack and self.workers:
            self._sample_stacks(now)
            self.next_stack = now + self.cfg.stack_every_s

    def _sample_stacks(self, now: float) -> None:
        snap = self.snapshots
        self.snapshots += 1
        workers = list(self.workers.values())
        with ThreadPoolExecutor(max_workers=min(8, len(workers))) as ex:
            results = list(ex.map(lambda w: (w, _safe_dump(self.stack_dumper, w.pid)), workers))
        for w, got in results:
            if got is None:
                continue
            fmt, text = got
            self.stacks.append(StackSample(snapshot=snap, time=now, rank=w.rank, local_rank=w.local_rank, pid=w.pid,
                                           fmt=fmt, text=text[:MAX_TEXT_CHARS]))
        self.urgent = True

    # ------------------------------------------------------------------ output
    def _event(self, kind: LiveEventKind, t: float, **kw: Any) -> None:
        self.events.append(LiveEvent(event=kind, time=t, **{k: v for k, v in kw.items() if v is not None}))
        if kind is not LiveEventKind.HEARTBEAT:
            log.info("%s %s", kind.value, {k: v for k, v in kw.items() if v is not None})

    def flush(self, force: bool = False) -> int:
        """Spool what has accumulated as one or more batches; returns how many were spooled."""
        self.last_flush = self.clock()
        self.urgent = False
        n = 0
        while self.events or self.logs or self.stacks or self.steps or self.fr:
            batch = self._take_batch()
            self.spool.put(self.prefix, batch.seq, batch.model_dump(mode="json", exclude_defaults=False))
            n += 1
        if n and self.sender is not None:
            self.sender.wake.set()
        return n

    def _take_batch(self) -> AgentBatch:
        chars = 0
        logs: list[LogChunk] = []
        while self.logs and len(logs) < MAX_BATCH_ITEMS and (not logs or chars + len(self.logs[0].text) <= MAX_BATCH_CHARS):
            c = self.logs.pop(0)
            chars += len(c.text)
            logs.append(c)
        stacks: list[StackSample] = []
        while (self.stacks and len(stacks) < MAX_BATCH_ITEMS
               and (not stacks or chars + len(self.stacks[0].text) <= MAX_BATCH_CHARS)):
            s = self.stacks.pop(0)
            chars += len(s.text)
            stacks.append(s)
        events, self.events = self.events[:MAX_BATCH_ITEMS], self.events[MAX_BATCH_ITEMS:]
        steps, self.steps = self.steps[:MAX_BATCH_ITEMS], self.steps[MAX_BATCH_ITEMS:]
        fr: list[FrDump] = []
        while self.fr and len(fr) < 64 and (not fr or chars + len(self.fr[0].data) <= MAX_BATCH_CHARS):
            d = self.fr.pop(0)
            chars += len(d.data)
            fr.append(d)
        batch = AgentBatch(agent_id=self.agent_id, node=self.cfg.node, seq=self.seq, sent=self.clock(),
                           events=events, logs=logs, stacks=stacks, steps=steps, fr=fr)
        self.seq += 1
        return batch


# ---------------------------------------------------------------------- helpers


#: How far back a step record's own ``end`` time may lie and still date the step (seconds): a feed's records are
#: read within a poll of being written, so an older or future time is another clock or another run.
RECORD_TIME_WINDOW_S = 600.0


def _record_end(rec: dict[str, Any], now: float) -> float | None:
    """The unix time a timing-feed record says its step ended (``end``), if it lies within
    :data:`RECORD_TIME_WINDOW_S` before ``now`` (and not after it by more than a second); else None."""
    end = rec.get("end")
    if isinstance(end, bool) or not isinstance(end, int | float):
        return None
    return float(end) if now - RECORD_TIME_WINDOW_S <= end <= now + 1.0 else None


def _split_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut after a newline where there is one."""
    out: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", 0, limit) + 1 or limit
        out.append(text[:cut])
        text = text[cut:]
    if text:
        out.append(text)
    return out


def _alive(pid: int) -> bool:
    import psutil

    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _workers(launcher_pid: int) -> dict[int, WorkerProc]:
    """The launcher's descendants that carry a ``RANK`` in their environment (torchrun's workers)."""
    import psutil

    out: dict[int, WorkerProc] = {}
    try:
        children = psutil.Process(launcher_pid).children(recursive=True)
    except psutil.Error:
        return out
    for c in children:
        try:
            env = c.environ()
        except psutil.Error:
            continue
        rank = env.get("RANK")
        if rank is None or not rank.isdigit():
            continue
        local = env.get("LOCAL_RANK")
        out[c.pid] = WorkerProc(pid=c.pid, rank=int(rank), local_rank=int(local) if local and local.isdigit() else None)
    # a worker's own children (DataLoader workers, compile workers) inherit RANK: keep the top-most one
    ranks: dict[int, WorkerProc] = {}
    for w in sorted(out.values(), key=lambda w: w.pid):
        ranks.setdefault(w.rank, w)
    return {w.pid: w for w in ranks.values()}


#: How a torchrun / torchelastic launcher shows in a command line: the ``torchrun`` entry point (itself or as
#: the script of a Python interpreter), or the modules it runs (``python -m torch.distributed.run``, the older
#: ``torch.distributed.launch``).
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
#: Options and environment variables of torchrun that name its log folder (``PET_*``: torchrun's env form,
#: which deploy/slurm/diag-srun.sh sets).
LOG_DIR_OPTIONS = ("--log-dir", "--log_dir")
LOG_DIR_ENV = ("PET_LOG_DIR",)


@dataclass
class LauncherMatch:
    """A launcher process that references a log folder: ``pid``, its ``cmdline``, and ``how`` (``log-dir``:
    its ``--log-dir`` or ``PET_LOG_DIR`` is the folder or inside it; ``argument``: another argument is;
    ``cwd``: it runs in the folder or below it)."""

    pid: int
    cmdline: list[str]
    how: str
    create_time: float = 0.0


def is_launcher(cmdline: list[str]) -> bool:
    """True when ``cmdline`` is a torchrun / torchelastic launcher (:data:`LAUNCHER_MODULES`, ``torchrun``)."""
    head = cmdline[:3]
    if any(os.path.basename(a) == "torchrun" for a in head):
        return True
    return any(m in cmdline[:4] for m in LAUNCHER_MODULES)


def _under(path: str, cwd: str | None, folder: str) -> bool:
    """``path`` (relative to ``cwd``) resolves to ``folder`` or inside it."""
    if not path or "\x00" in path:
        return False
    p = os.path.realpath(os.path.join(cwd or "/", path))
    return p == folder or p.startswith(folder.rstrip(os.sep) + os.sep)


def _log_dir_args(cmd: list[str]) -> list[str]:
    """The values of the :data:`LOG_DIR_OPTIONS` in a command line (``--log-dir D`` and ``--log-dir=D``)."""
    vals = []
    for i, a in enumerate(cmd):
        opt, eq, val = a.partition("=")
        if eq and opt in LOG_DIR_OPTIONS:
            vals.append(val)
        elif a in LOG_DIR_OPTIONS and i + 1 < len(cmd):
            vals.append(cmd[i + 1])
    return vals


def launcher_log_dir(cmd: list[str], env: Mapping[str, str]) -> Path | None:
    """The log folder a launcher command will write to: the first :data:`LOG_DIR_OPTIONS` value of ``cmd`` when
    ``cmd`` is a torchrun / torchelastic launcher (:func:`is_launcher`), else its :data:`LOG_DIR_ENV` in ``env``;
    ``None`` for another command or a launcher without one. Relative paths stay relative (to the working
    directory the command is started in, which is the agent's)."""
    if not is_launcher(cmd):
        return None
    for val in [*_log_dir_args(cmd), *(env.get(k, "") for k in LOG_DIR_ENV)]:
        if val and "\x00" not in val:
            return Path(val)
    return None


def find_launchers(log_dir: Path) -> list[LauncherMatch]:
    """The torchrun / torchelastic launchers (:func:`is_launcher`) on this machine whose command line, log-dir
    environment (:data:`LOG_DIR_ENV`) or working directory references ``log_dir`` (the folder or a path inside
    it; relative paths against the process's own working directory), the strongest reference first (``log-dir``,
    then ``argument``, then ``cwd``), then the oldest. Processes that cannot be read (another user's, gone) are
    skipped; this process and its ancestors never match."""
    import psutil

    folder = os.path.realpath(log_dir)
    mine = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        mine |= {p.pid for p in psutil.Process().parents()}
    out: list[LauncherMatch] = []
    for proc in psutil.process_iter(["pid", "cmdline", "create_time"]):
        cmd = proc.info.get("cmdline") or []
        if proc.pid in mine or not cmd or not is_launcher(cmd):
            continue
        try:
            cwd: str | None = proc.cwd()
        except psutil.Error:
            cwd = None
        how = "log-dir" if any(_under(v, cwd, folder) for v in _log_dir_args(cmd)) else None
        if how is None:
            with contextlib.suppress(psutil.Error):
                env = proc.environ()
                if any(_under(env.get(k, ""), cwd, folder) for k in LOG_DIR_ENV):
                    how = "log-dir"
        if how is None and any(_under(a.partition("=")[2] or a, cwd, folder) for a in cmd[1:] if "/" in a or a == "."):
            how = "argument"
        if how is None and cwd is not None and _under(cwd, None, folder):
            how = "cwd"
        if how is not None:
            out.append(LauncherMatch(pid=proc.pid, cmdline=list(cmd), how=how,
                                     create_time=float(proc.info.get("create_time") or 0.0)))
    rank = {"log-dir": 0, "argument": 1, "cwd": 2}
    return sorted(out, key=lambda m: (rank[m.how], m.create_time, m.pid))


def _pyspy_dumper(timeout_s: float) -> Callable[[int], tuple[str, str]]:
    from diag_service.lab.dumps import find_pyspy

    exe = find_pyspy()

    def dump(pid: int) -> tuple[str, str]:
        if exe is None:
            raise RuntimeError("py-spy is not installed")
        r = subprocess.run([exe, "dump", "--json", "--pid", str(pid)], capture_output=True, text=True,
                           timeout=timeout_s, check=False)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.strip()[:300] or f"py-spy exit {r.returncode}")
        return "py-spy-json", r.stdout

    return dump


def _safe_dump(dumper: Callable[[int], tuple[str, str]], pid: int) -> tuple[str, str] | None:
    try:
        return dumper(pid)
    except Exception as exc:  # noqa: BLE001 - a process that vanished or refused ptrace is one missing sample
        log.warning("no stack sample of pid %d: %s", pid, exc)
        return None


def launch(cmd: list[str], console_dir: Path) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    """Start ``cmd`` with its stdout and stderr copied to ``console_dir/console.log`` and to ours."""
    import sys

    console_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout

    def pump() -> None:
        with open(console_dir / "console.log", "ab") as fh:
            for line in iter(out.readline, b""):
                fh.write(line)
                fh.flush()
                sys.stdout.buffer.write(line)
                sys.stdout.flush()

    t = threading.Thread(target=pump, name="diag-watch-console", daemon=True)
    t.start()
    return proc, t


__all__ = ["FATAL_LINE", "STEP_LINE", "Agent", "LauncherMatch", "WatchSettings", "WorkerProc", "find_launchers",
           "is_launcher", "launch"]
