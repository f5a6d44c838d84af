"""The service's live jobs: agents' batches applied exactly once to one job folder, and the diagnoses they
trigger. No HTTP here (``diag_service.service.live`` puts the routes on it), so all of it is testable alone.

One live job is one folder, ``<root>/<job>/`` (``<root>`` is ``<data_dir>/live``; ``<job>`` the job id,
percent-quoted when it is not a plain name)::

    <node>/<path>                         log text, appended at the agent's offsets, redacted; <path>.1 = before a restart
    dumps/snap-<NNNNN>/rank-<R>.json|.txt stack samples (py-spy --json, py-spy text, faulthandler), redacted
    dumps/ranks.json, dumps/index.json    rank -> node, pid, local_rank; snapshot times (diag_service.ingest.members)
    timing.jsonl                          step records (docs/slow.md)
    events.jsonl                          lifecycle events in the ETPR format (docs/etpr.md), one line each
    .diagignore                           keeps events.jsonl and the state out of the diagnosis
    .live-state.json                      agents, their last applied seq, file sizes, times, diagnoses

**Exactly once.** Per (job, agent) the service keeps the last applied ``seq``: a batch with ``seq`` at or
below it is acknowledged with ``applied=False`` and changes nothing; one above ``last + 1`` is refused
(:class:`SeqGap`, HTTP 409, with the ``expected_seq``). The state, with the size of every file it
appended to, is written after the batch's files; when a job is loaded again (a restarted service), files
longer than the state says are cut back, so a batch half-applied before a crash is applied again whole.

**Nothing unredacted on disk.** Log text is redacted line by line (:func:`diag_service.redact.redact`,
private-key blocks across lines and chunks); a partial last line waits in memory for its end (written at a
failure, hang or finish, or past :data:`MAX_PENDING_CHARS`), so a secret cut by a chunk boundary is whole when
it is redacted. Stack samples (every
string of a JSON dump), step records and event texts are redacted too.

**Diagnoses.** A batch with a ``failure`` or ``hang_detected`` event, a stack sample, or a new log line that
the extractor's pre-filter takes (:func:`diag_service.extract.events.prefilter_with` with the signature
catalogue's patterns) asks for a diagnosis of the folder, ``debounce_s`` after the last such batch (one per
burst; never two of one job at once). It is *provisional* until every agent of the job has sent
``finished`` or ``failure`` (or gone stale, once one has) and nothing new arrived for ``settle_s``; then a last
diagnosis is run and marked *final*. New evidence after that makes the next one provisional again.

**Incidents.** The first ``failure``, ``hang_detected`` or slow alarm after the job started (or after a
``restart``) opens the job's next incident (``JobState.incident``, 1, 2, ...); more of them from other agents
belong to the same one. A final diagnosis of a job that had an incident is handed to ``on_final`` (the
service announces it through its alert path, de-duplicated per incident). A hang or slow incident without a
failure is announced earlier: a hung job stays allocated and its agents may not end for hours, so the first
diagnosis requested ``announce_running_s`` or more after the incident opened goes to ``on_final`` too
(provisional: the job is still running); a diagnosis is requested then if no evidence asked for one.

**Restarts.** A ``restart`` event is one more restart of the job when its agent reported the previous one
already (the agents of one relaunch each send one); ``first_step`` and ``progress`` events with a step beyond
the highest before a restart (or without a step) are training progress after it. The
restarts in a row without progress after them, with the policy's ``storm_restarts`` or more, are a restart
storm: a finding of the live view, and the ``restarts`` every diagnosis of the job is given
(:class:`~diag_service.domain.JobRestarts`), which the recovery policy reads instead of its history.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from diag_service.domain import JobRestarts, is_job_id
from diag_service.errors import Refused
from diag_service.live.contract import MAX_BATCH_CHARS, AgentBatch, BatchAck, LiveEvent, LiveEventKind, LogChunk, StackSample
from diag_service.live.settings import LiveSettings
from diag_service.redact import REDACTED, redact

log = logging.getLogger("diag_service.live")

STATE_FILE = ".live-state.json"
#: Names a node may not have: they are the job folder's own files.
RESERVED = frozenset({"dumps", "fr", "timing.jsonl", "events.jsonl", STATE_FILE, ".diagignore"})
#: A partial last line longer than this is written without waiting for its end (a line that long is cut by
#: ingest at 1 MiB anyway).
MAX_PENDING_CHARS = 64 << 10
_PEM_BEGIN = "-----BEGIN"
_PEM_END = "-----END"

JobStatus = Literal["running", "failed", "hung", "slow", "finished"]
_TERMINAL = (LiveEventKind.FINISHED, LiveEventKind.FAILURE)


class LiveRefused(Refused):
    """A batch the service will not apply. ``status``: HTTP status; ``reason``: a stable code."""


class SeqGap(LiveRefused):
    """The batch's ``seq`` is beyond the next one expected from its agent; resend from ``expected_seq``."""

    def __init__(self, expected_seq: int, got: int, agent_id: str) -> None:
        super().__init__(409, f"agent {agent_id!r}: batch seq {got} arrived, {expected_seq} expected next; "
                              f"resend from seq {expected_seq}", "seq_gap")
        self.expected_seq = expected_seq


# -- persisted state ---------------------------------------------------------------------------------------


class AgentState(BaseModel):
    agent_id: str
    node: str
    last_seq: int = -1
    first_seen: float = 0.0
    last_seen: float = 0.0
    state: JobStatus = "running"
    ended: str | None = None  # "finished" / "failure": the agent's job part is over


class FileState(BaseModel):
    end: int = 0  # source byte offset consumed up to
    size: int = 0  # bytes of the file on disk (the redacted text)
    restarts: int = 0
    gaps: int = 0  # chunks that began past ``end`` (bytes lost between)
    in_key: bool = False  # inside a private-key block at the end of the written text


class DiagnosisRef(BaseModel):
    id: str
    requested_at: float
    provisional: bool
    status: str = "queued"
    finished_at: float | None = None
    category: str | None = None
    failure_mode: str | None = None
    summary: str | None = None


class RestartMark(BaseModel):
    """One restart of the job: ``time`` of its first ``restart`` event (agent clock), ``step`` the highest training
    step seen before it, ``progressed`` once a step beyond it came after it, ``agents`` that reported it (the last
    restart's only)."""

    time: float
    step: int | None = None
    progressed: bool = False
    agents: list[str] = Field(default_factory=list)


#: Restarts kept in the state (the latest); a storm longer than this is reported as this long.
MAX_RESTART_MARKS = 50


class JobState(BaseModel):
    job_id: str
    created: float
    agents: dict[str, AgentState] = Field(default_factory=dict)
    files: dict[str, FileState] = Field(default_factory=dict)
    events_size: int = 0
    timing_size: int = 0
    bytes_written: int = 0
    ranks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    snapshots: dict[str, float] = Field(default_factory=dict)  # snapshot dir -> earliest sample time
    started_time: float | None = None  # first ``started`` (agent clock)
    detected_time: float | None = None  # first failure / hang detection (agent clock)
    slow_time: float | None = None  # the streaming fail-slow detector's first alarm (service clock)
    onset_time: float | None = None
    last_evidence: float | None = None  # service clock
    triggered: bool = False  # some evidence ever asked for a diagnosis
    slow_alarms: list[str] = Field(default_factory=list)  # the streaming fail-slow detector's first alarms
    slow_restarted: bool = False  # a restart came after the last of them: the attempt they timed is over
    dirty: bool = False  # evidence arrived since the last diagnosis was requested
    final_for: float | None = None  # last_evidence the final diagnosis covered
    diagnosed_logged: bool = False  # a ``diagnosed`` event was written for the current failure
    incident: int = 0  # incidents (failure, hang or slow episode) so far; the last one's number
    incident_open: bool = False  # the current incident has not been closed by a restart
    incident_time: float | None = None  # service clock: when the current incident opened
    incident_failure: bool = False  # the current incident includes a failure (announced when final)
    announced: int = 0  # the last incident announced while the job was still running
    phase_until: float | None = None  # service clock: end of a checkpoint/evaluation phase an agent reported
    phase_step: int | None = None  # the step the reporting agent had read when the phase began (None: not said)
    held_hangs: int = 0  # hang detections held back because the job was in such a phase
    restarts: int = 0  # restarts of the job (one per relaunch, however many agents reported it)
    restart_marks: list[RestartMark] = Field(default_factory=list)  # the latest restarts
    max_step: int | None = None  # the highest step of a first_step or progress event
    diagnoses: list[DiagnosisRef] = Field(default_factory=list)


# -- views -------------------------------------------------------------------------------------------------


class LiveAgentView(BaseModel):
    agent_id: str
    node: str
    last_seq: int
    first_seen: float
    last_seen: float = Field(description="Service clock, unix seconds: the last batch (heartbeats included).")
    state: JobStatus
    ended: str | None = None
    stale: bool = Field(description="No batch for stale_after x heartbeat_s while the agent's part has not ended.")


class LiveJobView(BaseModel):
    """A live job as ``GET /v1/live/jobs/{job_id}`` shows it. Times: unix seconds (agent clocks for
    ``started_time``/``detected_time``/``onset_time``, the service's for diagnoses)."""

    job_id: str
    status: JobStatus
    agents: list[LiveAgentView]
    created: float
    started_time: float | None = None
    detected_time: float | None = Field(default=None, description="First failure or hang detection.")
    slow_detected_time: float | None = Field(default=None, description="The streaming fail-slow detector's first alarm.")
    onset_time: float | None = None
    first_diagnosis_time: float | None = None
    final_diagnosis_time: float | None = None
    diagnosis_id: str | None = Field(default=None, description="The latest finished diagnosis (GET /v1/diagnoses/{id}).")
    summary: str | None = None
    category: str | None = None
    failure_mode: str | None = None
    provisional: bool | None = Field(default=None, description="True until the job ended and settled; None: no diagnosis yet.")
    diagnosis_pending: bool = False
    slow_alarms: list[str] = Field(default_factory=list, description="The streaming fail-slow detector's first alarms.")
    restarts: JobRestarts | None = Field(default=None, description="The job's restarts, from its agents' events.")
    findings: list[str] = Field(default_factory=list, description=(
        "The watchers' findings of the job: a restart storm (restart storm: N restarts in M min without a training step)."))
    diagnoses: list[DiagnosisRef] = Field(default_factory=list)
    files: int = 0
    gaps: int = 0


# -- helpers -----------------------------------------------------------------------------------------------


def folder_name(job_id: str) -> str:
    """The job folder's name for ``job_id``: the id itself when it is one plain name, else percent-quoted
    (``/`` as ``%2F``), shortened with a SHA-256 suffix past 200 characters. Raises :class:`LiveRefused`
    (422) for an id outside :data:`~diag_service.domain.JOB_ID_PATTERN`."""
    if not is_job_id(job_id):
        raise LiveRefused(422, "job_id must be 1-256 characters of letters, digits and ._:@/- (starting with a letter "
                               "or digit, no '..' segment)", "bad_job_id")
    name = urllib.parse.quote(job_id, safe="._:@-")
    if len(name) > 200:
        name = f"{name[:150]}-{hashlib.sha256(job_id.encode()).hexdigest()[:16]}"
    return name


def inside(root: Path, path: Path) -> bool:
    """True when ``path`` resolves (symbolic links followed) inside ``root``."""
    r = os.path.realpath(root)
    p = os.path.realpath(path)
    return p == r or p.startswith(r + os.sep)


def _redact_value(v: Any) -> Any:
    if isinstance(v, str):
        return redact(v)
    if isinstance(v, list):
        return [_redact_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _redact_value(x) for k, x in v.items()}
    return v


def redact_block(lines: list[str], in_key: bool) -> tuple[list[str], bool]:
    """Redact complete ``lines`` of one file; ``in_key``: the text before them ended inside a private-key
    block (its BEGIN line earlier, no END yet). Returns the lines and the state after them."""
    out: list[str] = []
    for line in lines:
        if in_key:
            if _PEM_END in line:
                in_key = False
            out.append(REDACTED + ("\n" if line.endswith("\n") else ""))
            continue
        out.append(redact(line))
        if _PEM_BEGIN in line and "PRIVATE KEY" in line:
            in_key = _PEM_END not in line[line.index(_PEM_BEGIN) + 1:]
    return out, in_key


def _error_filter() -> Any:
    """The extractor's candidate-line pre-filter with the patterns of the catalogue the pipeline uses
    (built-ins, then ``$DIAG_SIGNATURES_PATH``, then packs) as one RE2; both are cached by value
    (:func:`~diag_service.signatures.site_catalog`, :func:`~diag_service.extract.events.prefilter_with`)."""
    from diag_service.extract.events import prefilter_with
    from diag_service.signatures import site_catalog

    return prefilter_with(site_catalog().prefilter_patterns())


def has_error_line(text: str) -> bool:
    """True when some line of ``text`` is a candidate event for the extractor (an error, a traceback, a
    signal, an NCCL warning, a signature's pattern): the cheap test for "diagnose again"."""
    return bool(text) and _error_filter().search(text) is not None


def _atomic_write(path: Path, data: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _write_ranks(dumps: Path, st: JobState) -> None:
    """``dumps/ranks.json``: the job's rank map (rank -> node, pid, local_rank), ranks in numeric order."""
    _atomic_write(dumps / "ranks.json", json.dumps(dict(sorted(st.ranks.items(), key=lambda kv: int(kv[0]))), indent=1))


def _truncate(path: Path, size: int) -> None:
    try:
        if path.stat().st_size > size:
            os.truncate(path, size)
    except FileNotFoundError:
        pass


# -- the job registry --------------------------------------------------------------------------------------

#: ``submit(job_id, folder, provisional)`` queues a diagnosis of ``folder`` and returns its id; None when it
#: cannot now (the queue is full): it is asked again later.
SubmitFn = Callable[[str, Path, bool], str | None]
#: ``on_final(job_id, diagnosis_id, incident)``: a final diagnosis of a job with an incident is done
#: (``incident``: the job's incident number, from 1). Called outside the job's lock; may be called again for
#: the same incident (a later final diagnosis, an outcome replayed after a restart): the receiver de-duplicates.
FinalFn = Callable[[str, str, int], None]


@dataclass
class _Live:
    state: JobState
    folder: Path
    lock: threading.Lock
    pending: dict[str, str]  # file key -> partial last line not yet written (memory only)
    in_flight: str | None = None  # a diagnosis requested and not finished
    slow: Any = None  # the job's streaming fail-slow detector (diag_service.slow.SlowDetector), memory only


class LiveJobs:
    """Every live job of one service, under ``root``. Thread-safe; one process owns ``root``.

    ``submit``: how a diagnosis is queued (None: never diagnose). ``on_final``: told of each final diagnosis of a
    job that had an incident (:data:`FinalFn`). ``clock``: unix seconds (tests pass their own).
    ``storm_restarts``: restarts in a row without training progress that are a restart storm (the recovery
    policy's ``history.storm_restarts``).
    """

    def __init__(self, root: Path, settings: LiveSettings | None = None, submit: SubmitFn | None = None,
                 clock: Callable[[], float] = time.time, on_final: FinalFn | None = None,
                 storm_restarts: int = 3) -> None:
        self.root = Path(root)
        self.settings = settings or LiveSettings()
        self.submit = submit
        self.on_final = on_final
        self.clock = clock
        self.storm_restarts = storm_restarts
        self._jobs: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._early: dict[str, dict[str, Any]] = {}  # outcomes reported before their request was recorded
        self._scheduler = _Scheduler(self._fire)

    def close(self) -> None:
        """Stop the diagnosis timer (queued diagnoses are the queue's)."""
        self._scheduler.close()

    # -- loading -------------------------------------------------------------------------------------

    def _get(self, job_id: str, create: bool) -> _Live | None:
        name = folder_name(job_id)
        with self._lock:
            live = self._jobs.get(job_id)
            if live is not None:
                return live
            folder = self.root / name
            state_path = folder / STATE_FILE
            state: JobState | None = None
            if state_path.is_file():
                try:
                    state = JobState.model_validate_json(state_path.read_bytes())
                except (OSError, ValueError) as exc:
                    log.error("live job %s: state unreadable (%s); starting afresh", job_id, exc)
            if state is not None and state.job_id != job_id:
                raise LiveRefused(409, f"live folder {name!r} belongs to job {state.job_id!r}", "job_folder_taken")
            if state is None:
                if not create:
                    return None
                folder.mkdir(parents=True, exist_ok=True)
                if not inside(self.root, folder):
                    raise LiveRefused(422, "job folder outside the live root", "bad_job_id")
                (folder / ".diagignore").write_text(
                    "# live job bookkeeping, not logs\nevents.jsonl\n" + STATE_FILE + "\n", encoding="utf-8")
                state = JobState(job_id=job_id, created=self.clock())
            else:
                self._roll_back(folder, state)
            live = self._jobs[job_id] = _Live(state=state, folder=folder, lock=threading.Lock(), pending={})
            if state.triggered and (state.dirty or state.final_for != state.last_evidence):
                self._scheduler.schedule(job_id, self.settings.debounce_s)
            return live

    @staticmethod
    def _roll_back(folder: Path, state: JobState) -> None:
        """Cut appended files back to the sizes the state recorded (a batch applied in part before a crash)."""
        _truncate(folder / "events.jsonl", state.events_size)
        _truncate(folder / "timing.jsonl", state.timing_size)
        for key, fs in state.files.items():
            p = folder / key
            if inside(folder, p):
                _truncate(p, fs.size)

    def _restore(self, live: _Live, pending: dict[str, str]) -> None:
        """Undo a batch that failed half-way: the state as last saved, the files cut back to it."""
        failed = live.state
        try:
            live.state = JobState.model_validate_json((live.folder / STATE_FILE).read_bytes())
        except (OSError, ValueError):
            live.state = JobState(job_id=failed.job_id, created=failed.created)
        live.pending = pending
        with contextlib.suppress(OSError):
            self._roll_back(live.folder, live.state)
            for key in failed.files.keys() - live.state.files.keys():  # files the batch began
                p = live.folder / key
                if inside(live.folder, p):
                    p.unlink(missing_ok=True)

    def _save(self, live: _Live) -> None:
        _atomic_write(live.folder / STATE_FILE, live.state.model_dump_json())

    # -- applying a batch ----------------------------------------------------------------------------

    def apply(self, job_id: str, batch: AgentBatch) -> tuple[BatchAck, bool]:
        """Apply ``batch`` to job ``job_id`` once. Returns the acknowledgement and whether the batch asked for
        a diagnosis. Raises :class:`SeqGap` (409) for a gap, :class:`LiveRefused` for a batch over a bound
        (413) or a bad node or job id (422), ``OSError`` when the folder cannot be written."""
        if batch.chars() > MAX_BATCH_CHARS:
            raise LiveRefused(413, f"batch of {batch.chars()} characters of text is over the limit of {MAX_BATCH_CHARS}",
                              "batch_size")
        if batch.node in RESERVED:
            raise LiveRefused(422, f"node name {batch.node!r} is reserved", "bad_node")
        live = self._get(job_id, create=True)
        assert live is not None
        now = self.clock()
        with live.lock:
            st = live.state
            agent = st.agents.get(batch.agent_id)
            last = agent.last_seq if agent is not None else -1
            if batch.seq <= last:
                if agent is not None:
                    agent.last_seen = now
                return self._ack(job_id, live, batch.seq, applied=False), False
            if batch.seq > last + 1:
                raise SeqGap(last + 1, batch.seq, batch.agent_id)
            if agent is None:
                if len(st.agents) >= self.settings.max_agents_per_job:
                    raise LiveRefused(413, f"job has {len(st.agents)} agents already (max_agents_per_job)", "too_many_agents")
                agent = AgentState(agent_id=batch.agent_id, node=batch.node, first_seen=now)
            elif agent.node != batch.node:
                raise LiveRefused(409, f"agent {batch.agent_id!r} watches node {agent.node!r}, not {batch.node!r}",
                                  "agent_node")
            new_keys = {f"{batch.node}/{c.path}" for c in batch.logs} - st.files.keys()
            if len(st.files) + len(new_keys) > self.settings.max_files_per_job:
                raise LiveRefused(413, f"job would have more than {self.settings.max_files_per_job} log files "
                                       "(max_files_per_job)", "too_many_files")
            if st.bytes_written + 2 * batch.chars() > self.settings.max_job_bytes:
                raise LiveRefused(413, f"the job's folder is at its limit of {self.settings.max_job_bytes} bytes "
                                       "(max_job_bytes)", "job_size")
            pending = dict(live.pending)
            try:
                trigger = self._apply(live, agent, batch, now)
                agent.last_seq = batch.seq
                agent.last_seen = now
                st.agents[batch.agent_id] = agent
                evidence = bool(batch.logs or batch.stacks or batch.steps
                                or any(e.event != LiveEventKind.HEARTBEAT for e in batch.events))
                if evidence:
                    st.last_evidence = now
                if trigger:
                    st.triggered = st.dirty = True
                self._save(live)
            except BaseException:
                self._restore(live, pending)
                raise
            ack = self._ack(job_id, live, batch.seq, applied=True)
            wait = self._final_wait(st, now)
            announce = self._announce_wait(st, now)
        if trigger:
            self._scheduler.schedule(job_id, self.settings.debounce_s)
        elif wait is not None:
            self._scheduler.schedule(job_id, max(0.05, wait), keep_earlier=True)
        if announce is not None:
            self._scheduler.schedule(job_id, max(0.05, announce), keep_earlier=True)
        return ack, trigger

    def _ack(self, job_id: str, live: _Live, seq: int, applied: bool) -> BatchAck:
        done = [d for d in live.state.diagnoses if d.status == "done"]
        left = (live.state.phase_until - self.clock()) if live.state.phase_until is not None else 0.0
        return BatchAck(job_id=job_id, seq=seq, applied=applied, status=self._status(live.state),
                        diagnosis_id=done[-1].id if done else None, heartbeat_s=self.settings.heartbeat_s,
                        job_phase_s=round(left, 3) if left > 0 else None)

    def _in_phase(self, st: JobState, now: float) -> bool:
        """Whether a checkpoint or evaluation phase an agent reported is still on (and no incident is open)."""
        return st.phase_until is not None and now < st.phase_until and not st.incident_open

    def _apply(self, live: _Live, agent: AgentState, batch: AgentBatch, now: float) -> bool:
        trigger = False
        held = self._in_phase(live.state, now)  # stack samples of a held hang are kept, not diagnosed
        for chunk in batch.logs:
            trigger |= self._append_log(live, batch.node, chunk)
        if batch.stacks:
            self._write_stacks(live, batch.node, batch.stacks)
            trigger = trigger or not held
        if batch.fr:
            self._write_fr(live, batch)
            trigger = True
        if batch.steps:
            self._append_steps(live, batch.node, batch.steps)
            trigger |= self._detect_slow(live, batch.steps, now)
        trigger |= self._record_events(live, agent, batch, now)
        if any(e.event in (*_TERMINAL, LiveEventKind.HANG_DETECTED) for e in batch.events):
            trigger |= self._flush_pending(live)
        return trigger

    def _append_log(self, live: _Live, node: str, chunk: LogChunk) -> bool:
        key = f"{node}/{chunk.path}"
        dest = live.folder / node / chunk.path
        if not inside(live.folder, dest) or dest.name == STATE_FILE:
            raise LiveRefused(422, f"log path {chunk.path!r} leaves the job folder", "bad_path")
        st = live.state
        fs = st.files.get(key)
        if fs is None:
            fs = st.files[key] = FileState()
        data = chunk.text.encode("utf-8", "surrogatepass")
        if chunk.restarted:
            pending = live.pending.pop(key, "")
            if pending:
                self._write_lines(live, dest, fs, pending)
            if dest.exists():
                os.replace(dest, dest.with_name(dest.name + ".1"))
            st.files[key] = fs = FileState(restarts=fs.restarts + 1)
        if chunk.offset + len(data) <= fs.end:
            return False  # already written (an agent that re-read the file)
        if chunk.offset < fs.end:
            data = data[fs.end - chunk.offset:]
            text = data.decode("utf-8", "ignore")
        else:
            if chunk.offset > fs.end:
                fs.gaps += 1
            text = chunk.text
        fs.end = chunk.offset + len(chunk.text.encode("utf-8", "surrogatepass"))
        text = live.pending.pop(key, "") + text
        cut = text.rfind("\n") + 1
        head, tail = text[:cut], text[cut:]
        if len(tail) > MAX_PENDING_CHARS:
            head, tail = text, ""
        if tail:
            live.pending[key] = tail
        if not head:
            return False
        self._write_lines(live, dest, fs, head)
        return has_error_line(head)

    def _write_lines(self, live: _Live, dest: Path, fs: FileState, text: str) -> None:
        lines, fs.in_key = redact_block(text.splitlines(keepends=True), fs.in_key)
        out = "".join(lines).encode("utf-8", "replace")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "ab") as fh:
                fh.write(out)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            raise LiveRefused(422, f"log path {dest.relative_to(live.folder)} is a folder, or under a file, of this "
                                   "job's logs", "bad_path") from None
        fs.size += len(out)
        live.state.bytes_written += len(out)

    def _flush_pending(self, live: _Live) -> bool:
        """Write every partial last line now (the job ended or hangs: no more text may come)."""
        trigger = False
        for key, text in sorted(live.pending.items()):
            fs = live.state.files.get(key)
            if fs is None or not text:
                continue
            self._write_lines(live, live.folder / key, fs, text)
            trigger |= has_error_line(text)
        live.pending.clear()
        return trigger

    def _write_stacks(self, live: _Live, node: str, stacks: list[StackSample]) -> None:
        st = live.state
        dumps = live.folder / "dumps"
        for s in stacks:
            snap = f"snap-{s.snapshot:05d}"
            if s.fmt == "py-spy-json":
                try:
                    body = json.dumps(_redact_value(json.loads(s.text)), indent=1)
                except ValueError:
                    body = "".join(redact_block(s.text.splitlines(keepends=True), False)[0])
                name = f"rank-{s.rank}.json"
            else:
                body = "".join(redact_block(s.text.splitlines(keepends=True), False)[0])
                name = f"rank-{s.rank}.txt"
            dest = dumps / snap / name
            if not inside(live.folder, dest):
                raise LiveRefused(422, "stack sample path leaves the job folder", "bad_path")
            dest.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(dest, body)
            st.bytes_written += len(body)
            st.snapshots[snap] = min(st.snapshots.get(snap, s.time), s.time)
            st.ranks[str(s.rank)] = {"node": node, "pid": s.pid, "local_rank": s.local_rank}
        _write_ranks(dumps, st)
        index = [{"index": i, "dir": d, "time": t} for i, (d, t) in enumerate(sorted(st.snapshots.items()))]
        _atomic_write(dumps / "index.json", json.dumps(index, indent=1))

    def _write_fr(self, live: _Live, batch: AgentBatch) -> None:
        """Store each Flight Recorder dump as ``fr/<name>`` (whole files, written atomically: a resend rewrites
        the same bytes). Never unpickled here."""
        import base64
        import binascii

        from diag_service.live.contract import MAX_FR_BYTES

        folder = live.folder / "fr"
        for d in batch.fr:
            try:
                data = base64.b64decode(d.data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise LiveRefused(422, f"Flight Recorder dump {d.name!r}: not base64 ({exc})", "bad_fr") from None
            if len(data) > MAX_FR_BYTES:
                raise LiveRefused(413, f"Flight Recorder dump {d.name!r} is over {MAX_FR_BYTES} bytes", "fr_too_large")
            dest = folder / d.name
            if not inside(live.folder, dest):
                raise LiveRefused(422, "Flight Recorder dump path leaves the job folder", "bad_path")
            folder.mkdir(exist_ok=True)
            tmp = dest.with_name(f".{d.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, dest)
            live.state.bytes_written += len(data)

    def _append_steps(self, live: _Live, node: str, steps: list[dict[str, Any]]) -> None:
        lines = []
        for rec in steps:
            rec = _redact_value(rec)
            rec.setdefault("node", node)
            try:
                lines.append(json.dumps(rec, allow_nan=False, default=str) + "\n")
            except ValueError:
                continue  # NaN / Infinity: not JSON, not a step record
        self._append(live, "timing.jsonl", lines)

    def _detect_slow(self, live: _Live, steps: list[dict[str, Any]], now: float) -> bool:
        """Feed step records to the job's streaming fail-slow detector; on its first alarm the job is slow and a
        ``slow_detected`` event is written (once per job and process: the detector starts afresh after a
        restart of the service)."""
        if live.slow is None:
            from diag_service.slow import SlowDetector

            live.slow = SlowDetector(source=f"live:{live.state.job_id}")
        alarms = live.slow.update(steps)
        st = live.state
        if not alarms:
            return False
        first_alarm = not st.slow_alarms
        st.slow_alarms = [*st.slow_alarms, *(redact(a.message)[:500] for a in alarms)][:10]
        st.slow_restarted = False
        if not first_alarm:
            return True
        if st.slow_time is None:  # when the service knew (its clock)
            st.slow_time = now
        self._open_incident(st, now)
        first = alarms[0]
        row: dict[str, Any] = {"job": st.job_id, "event": "slow_detected", "time": first.time or now,
                               "mode": "fail_slow", "cause": redact(first.message)[:2000]}
        if first.scope == "node":
            row["node"] = first.subject
        self._append(live, "events.jsonl", [json.dumps(row) + "\n"])
        return True

    def _append(self, live: _Live, name: str, lines: Iterable[str]) -> None:
        data = "".join(lines).encode("utf-8", "replace")
        if not data:
            return
        with open(live.folder / name, "ab") as fh:
            fh.write(data)
        if name == "timing.jsonl":
            live.state.timing_size += len(data)
        else:
            live.state.events_size += len(data)
        live.state.bytes_written += len(data)

    def _record_events(self, live: _Live, agent: AgentState, batch: AgentBatch, now: float) -> bool:
        st = live.state
        trigger = False
        lines = []
        workers = False
        for ev in batch.events:
            if ev.event == LiveEventKind.HEARTBEAT:
                continue
            if ev.event == LiveEventKind.PHASE:  # a checkpoint or evaluation phase: the other agents are told
                grace = min(ev.duration if ev.duration is not None else self.settings.phase_s, self.settings.phase_s)
                st.phase_until = max(st.phase_until or 0.0, now + grace)
                st.phase_step = ev.step
                continue
            if (ev.event in (LiveEventKind.FIRST_STEP, LiveEventKind.PROGRESS) and self._in_phase(st, now)
                    and ev.step is not None and st.phase_step is not None and ev.step > st.phase_step):
                # a step beyond the one the phase began after: the job trains again (a synchronous step needs every
                # rank), so the phase is over and a stall from now on is a hang (else a save 4 s
                # before a rank hung holds the hang back for the phase's whole 40 s, past gloo's own timeout)
                st.phase_until, st.phase_step = None, None
            if ev.event == LiveEventKind.HANG_DETECTED and self._in_phase(st, now):
                # ranks of other nodes wait in the next collective while one saves or evaluates: the agent is
                # told (BatchAck.job_phase_s), withdraws it and declares a hang again if the wait outlasts the phase
                st.held_hangs += 1
                log.info("live job %s: hang of %s held: the job is in a checkpoint or evaluation phase",
                         st.job_id, batch.node)
                continue
            if ev.event == LiveEventKind.WORKER:  # the rank map of the job's logs and dumps, not an ETPR event
                if ev.rank is not None:
                    st.ranks[str(ev.rank)] = {"node": batch.node, "pid": ev.pid, "local_rank": ev.local_rank}
                    workers = True
                continue
            lines.append(json.dumps(self._etpr(st.job_id, batch, ev)) + "\n")
            kind = ev.event
            if kind == LiveEventKind.RESTART:
                self._count_restart(st, batch.agent_id, ev.time)
            elif kind in (LiveEventKind.FIRST_STEP, LiveEventKind.PROGRESS):
                self._count_progress(st, ev)
            if kind == LiveEventKind.STARTED and st.started_time is None:
                st.started_time = ev.time
            if kind in (LiveEventKind.FAILURE, LiveEventKind.HANG_DETECTED):
                trigger = True
                self._open_incident(st, now, failure=kind == LiveEventKind.FAILURE)
                if st.detected_time is None:
                    st.detected_time = ev.time
                    st.onset_time = ev.onset_time
            if kind in (LiveEventKind.STARTED, LiveEventKind.RESTART):
                agent.state, agent.ended = "running", None
                if kind == LiveEventKind.RESTART:
                    st.diagnosed_logged = False
                    st.incident_open = False
                    st.slow_restarted = bool(st.slow_alarms)
            elif kind in (LiveEventKind.FIRST_STEP, LiveEventKind.PROGRESS, LiveEventKind.CHECKPOINT_SAVED):
                if agent.state in ("hung", "slow"):
                    agent.state = "running"
            elif kind == LiveEventKind.FAILURE:
                agent.state, agent.ended = "failed", "failure"
            elif kind == LiveEventKind.HANG_DETECTED:
                agent.state = "hung"
            elif kind == LiveEventKind.SLOW_DETECTED:
                if agent.state == "running":
                    agent.state = "slow"
            elif kind == LiveEventKind.FINISHED:
                agent.ended = "finished"
                if ev.status not in (None, "succeeded", "success", "ok", "completed"):
                    agent.state = "failed"
                elif agent.state != "failed":
                    agent.state = "finished"
        self._append(live, "events.jsonl", lines)
        if workers:
            dumps = live.folder / "dumps"
            dumps.mkdir(exist_ok=True)
            _write_ranks(dumps, st)
        return trigger

    @staticmethod
    def _count_restart(st: JobState, agent_id: str, at: float) -> None:
        """A ``restart`` event of ``agent_id`` at ``at``: a new restart of the job when it is the first or when this
        agent reported the last one already; else the same relaunch seen by another agent (each agent of a
        relaunch reports it, in any order with the others' next events)."""
        marks = st.restart_marks
        if marks and agent_id not in marks[-1].agents:
            marks[-1].agents.append(agent_id)
            return
        st.restarts += 1
        if marks:  # only the last relaunch keeps its reporters (the state is written with every batch)
            marks[-1].agents = []
        marks.append(RestartMark(time=at, step=st.max_step, agents=[agent_id]))
        del marks[:-MAX_RESTART_MARKS]

    @staticmethod
    def _count_progress(st: JobState, ev: LiveEvent) -> None:
        """A ``first_step`` or ``progress`` event: training progress after the latest restart that happened before it
        (an event reported late belongs between the restarts it came between) when its step is beyond the highest
        before that restart, or it has none."""
        mark = next((m for m in reversed(st.restart_marks) if m.time <= ev.time), None)
        if mark is not None and (ev.step is None or mark.step is None or ev.step > mark.step):
            mark.progressed = True
        for m in st.restart_marks:  # the restarts after it came after that step too
            if ev.step is not None and m.time > ev.time and (m.step is None or m.step < ev.step):
                m.step = ev.step
        if ev.step is not None:
            st.max_step = ev.step if st.max_step is None else max(st.max_step, ev.step)

    @staticmethod
    def _restarts(st: JobState) -> JobRestarts:
        """The job's restarts as a diagnosis and the view take them."""
        streak: list[RestartMark] = []
        for m in reversed(st.restart_marks):
            if m.progressed:
                break
            streak.append(m)
        return JobRestarts(count=st.restarts, without_progress=len(streak),
                           first_time=streak[-1].time if streak else None, last_time=streak[0].time if streak else None,
                           highest_step=st.max_step)

    def restarts(self, job_id: str) -> JobRestarts | None:
        """The restarts of live job ``job_id`` so far (None when there is no such live job)."""
        live = self._get(job_id, create=False)
        if live is None:
            return None
        with live.lock:
            return self._restarts(live.state)

    @staticmethod
    def _open_incident(st: JobState, now: float, failure: bool = False) -> None:
        """A failure, hang or slow alarm: the job's next incident begins unless one is open already."""
        if not st.incident_open:
            st.incident += 1
            st.incident_open = True
            st.incident_time, st.incident_failure = now, False
        st.incident_failure = st.incident_failure or failure

    @staticmethod
    def _etpr(job_id: str, batch: AgentBatch, ev: LiveEvent) -> dict[str, Any]:
        """One ETPR event line (docs/etpr.md): ``job``, ``event``, ``time`` and the fields the agent gave, with
        the agent and the node it watches as ``agent`` / ``source_node`` (``node`` is the node *blamed*)."""
        row: dict[str, Any] = {"job": job_id, "event": ev.event.value, "time": ev.time}
        for k, v in ev.model_dump(exclude={"event", "time"}, exclude_none=True).items():
            row[k] = redact(v) if isinstance(v, str) else v
        row["agent"] = batch.agent_id
        row["source_node"] = batch.node
        return row

    # -- status ------------------------------------------------------------------------------------


    @staticmethod
    def _status(st: JobState) -> JobStatus:
        states = [a.state for a in st.agents.values()]
        for s in ("failed", "hung", "slow"):
            if s in states:
                return s  # type: ignore[return-value]
        if states and all(s == "finished" for s in states):
            return "finished"
        # an alarm of an attempt that a restart ended no longer says how the job runs (a new user's trial 46, r08: a
        # 1.09x alarm before a rank's failure read "slow" for the whole restarted attempt, which trained normally)
        return "slow" if st.slow_alarms and not st.slow_restarted else "running"

    def _final_wait(self, st: JobState, now: float) -> float | None:
        """Seconds until the final diagnosis is due (0 or less: now), or None when none is pending (nothing
        asked for a diagnosis, the last final one covers the latest evidence, or no agent has ended yet).
        It is due once every agent has sent ``finished`` or ``failure`` or gone stale (a dead agent does not
        hold the final diagnosis back forever) and no evidence came for ``settle_s``."""
        agents = st.agents.values()
        if not st.triggered or st.final_for == st.last_evidence or not any(a.ended for a in agents):
            return None
        stale_s = self.settings.stale_after * self.settings.heartbeat_s
        waits = [self.settings.settle_s - (now - st.last_evidence) if st.last_evidence is not None else 0.0]
        waits += [a.last_seen + stale_s - now for a in agents if a.ended is None]
        return max(waits)

    def _announce_wait(self, st: JobState, now: float) -> float | None:
        """Seconds until a running hang or slow incident is due to be announced (0 or less: now), or None
        when there is none to announce (no open incident, one with a failure, or announced already)."""
        if (not st.incident_open or st.incident_failure or st.incident_time is None
                or st.announced >= st.incident):
            return None
        return st.incident_time + self.settings.announce_running_s - now

    # -- diagnoses ---------------------------------------------------------------------------------

    def _fire(self, job_id: str) -> None:
        """The debounce timer of ``job_id`` ran out: request a diagnosis if one is due."""
        live = self._get(job_id, create=False)
        if live is None or self.submit is None:
            return
        now = self.clock()
        with live.lock:
            st = live.state
            if live.in_flight is not None:
                return  # asked again when it finishes
            wait = self._final_wait(st, now)
            settled = wait is not None and wait <= 0
            announce = self._announce_wait(st, now)
            if not (st.dirty or settled or (announce is not None and announce <= 0)):
                nxt = [w for w in (wait, announce) if w is not None]
                if nxt:
                    self._scheduler.schedule(job_id, max(0.05, min(nxt)))
                return
            if not self._has_input(st):
                return  # nothing to read yet; the next log or stack batch asks again
            evidence = st.last_evidence
            dirty = st.dirty
            st.dirty = False
            self._save(live)
        try:
            diag_id = self.submit(job_id, live.folder, not settled)
        except Exception:  # noqa: BLE001 - a failed submission is retried, never lost
            log.exception("live job %s: diagnosis not submitted", job_id)
            diag_id = None
        with live.lock:
            st = live.state  # (a failed batch may have restored it meanwhile)
            if diag_id is None:
                st.dirty = st.dirty or dirty
                retry = True
            else:
                retry = False
                live.in_flight = diag_id
                st.diagnoses.append(DiagnosisRef(id=diag_id, requested_at=now, provisional=not settled))
                del st.diagnoses[:-50]
                if settled:
                    st.final_for = evidence
            self._save(live)
            wait = self._final_wait(st, self.clock())
        early = self._early.pop(diag_id, None) if diag_id is not None else None
        if early is not None:
            self.diagnosis_finished(job_id, diag_id, **early)  # type: ignore[arg-type]
            return
        if retry:
            self._scheduler.schedule(job_id, max(1.0, self.settings.debounce_s))
        elif wait is not None:
            self._scheduler.schedule(job_id, max(0.05, wait), keep_earlier=True)

    @staticmethod
    def _has_input(st: JobState) -> bool:
        """Whether the folder holds what a diagnosis needs: log text or stack samples (a timing feed alone is
        not a bundle; ``diag slow`` reads those)."""
        return bool(st.snapshots) or any(f.size > 0 for f in st.files.values())

    def diagnosis_finished(self, job_id: str, diag_id: str, *, status: str, finished_at: float | None,
                           category: str | None = None, failure_mode: str | None = None,
                           summary: str | None = None) -> None:
        """Record the outcome of a diagnosis this registry requested (``status``: ``done`` / ``failed``), and
        request the next one if evidence arrived meanwhile; an outcome already recorded is ignored. The first
        diagnosis after a failure or hang is also written as a ``diagnosed`` event (ETPR's diagnosis time). A
        final one of a job with an incident goes to ``on_final``."""
        live = self._get(job_id, create=False)
        if live is None:
            return
        final: int | None = None
        with live.lock:
            st = live.state
            ref = next((d for d in st.diagnoses if d.id == diag_id), None)
            if ref is None:  # finished before _fire recorded it: applied when it does
                self._early[diag_id] = {"status": status, "finished_at": finished_at, "category": category,
                                        "failure_mode": failure_mode, "summary": summary}
                return
            if ref.status in ("done", "failed"):  # recorded already (the done callback and a view's sweep race)
                return
            ref.status, ref.finished_at = status, finished_at
            ref.category, ref.failure_mode = category, failure_mode
            ref.summary = (summary or "")[:2000] or None
            if status == "done" and st.detected_time is not None and not st.diagnosed_logged and finished_at:
                row: dict[str, Any] = {"job": job_id, "event": "diagnosed", "time": finished_at}
                if failure_mode:
                    row["mode"] = failure_mode
                if category:
                    row["category"] = category
                row["diagnosis_id"] = diag_id
                self._append(live, "events.jsonl", [json.dumps(row) + "\n"])
                st.diagnosed_logged = True
            if live.in_flight == diag_id:
                live.in_flight = None
            if status == "done" and not ref.provisional and st.incident > 0:
                final = st.incident
            elif (status == "done" and st.incident > st.announced and st.incident_open and not st.incident_failure
                  and st.incident_time is not None
                  and ref.requested_at >= st.incident_time + self.settings.announce_running_s):
                final = st.incident  # a hang or slow incident of a job still running: announced now
            if final is not None:
                st.announced = max(st.announced, final)
            self._save(live)
            again = st.dirty or self._final_wait(st, self.clock()) is not None
            announce = self._announce_wait(st, self.clock())
        if final is not None and self.on_final is not None:
            try:
                self.on_final(job_id, diag_id, final)
            except Exception:  # noqa: BLE001 - an announcement that failed must not stop the diagnoses
                log.exception("live job %s: final diagnosis %s not announced", job_id, diag_id)
        if again:
            self._scheduler.schedule(job_id, self.settings.debounce_s)
        elif announce is not None:  # (at least 1 s: a diagnosis that failed is not retried in a tight loop)
            self._scheduler.schedule(job_id, max(1.0, announce), keep_earlier=True)

    # -- reading -----------------------------------------------------------------------------------

    def view(self, job_id: str) -> LiveJobView | None:
        """The job as the API shows it, or None when there is no such live job."""
        live = self._get(job_id, create=False)
        if live is None:
            return None
        now = self.clock()
        stale_s = self.settings.stale_after * self.settings.heartbeat_s
        with live.lock:
            st = live.state
            agents = [LiveAgentView(**a.model_dump(), stale=a.ended is None and now - a.last_seen > stale_s)
                      for a in st.agents.values()]
            done = [d for d in st.diagnoses if d.status == "done"]
            latest = done[-1] if done else None
            finals = [d for d in done if not d.provisional]
            final = finals[-1] if finals and finals[-1] is latest else None
            restarts = self._restarts(st)
            storm = restarts.storm(self.storm_restarts)
            return LiveJobView(
                job_id=st.job_id, status=self._status(st), agents=agents, created=st.created,
                started_time=st.started_time, detected_time=st.detected_time, slow_detected_time=st.slow_time,
                onset_time=st.onset_time,
                first_diagnosis_time=done[0].finished_at if done else None,
                final_diagnosis_time=final.finished_at if final else None,
                diagnosis_id=latest.id if latest else None, summary=latest.summary if latest else None,
                category=latest.category if latest else None, failure_mode=latest.failure_mode if latest else None,
                provisional=latest.provisional if latest else None,
                diagnosis_pending=live.in_flight is not None or st.dirty, slow_alarms=list(st.slow_alarms),
                restarts=restarts, findings=[storm] if storm else [], diagnoses=list(st.diagnoses),
                files=len(st.files), gaps=sum(f.gaps for f in st.files.values()),
            )

    def snapshot(self, job_id: str, dest: Path) -> bool:
        """Copy what an ETPR account of ``job_id`` reads (``events.jsonl``, ``timing.jsonl`` and the state, each as
        far as the last applied batch wrote it, so never half a line) into the folder ``dest``; False when there
        is no such live job. Raises ``OSError`` when the copies cannot be written."""
        live = self._get(job_id, create=False)
        if live is None:
            return False
        dest.mkdir(parents=True, exist_ok=True)
        with live.lock:
            st = live.state
            for name, size in (("events.jsonl", st.events_size), ("timing.jsonl", st.timing_size)):
                with contextlib.suppress(FileNotFoundError), open(live.folder / name, "rb") as src, \
                        open(dest / name, "wb") as out:
                    out.write(src.read(size))
            (dest / STATE_FILE).write_text(st.model_dump_json(), encoding="utf-8")
        return True

    def pending_diagnoses(self, job_id: str) -> list[str]:
        """Ids of diagnoses requested for ``job_id`` whose outcome is not recorded yet."""
        live = self._get(job_id, create=False)
        if live is None:
            return []
        with live.lock:
            return [d.id for d in live.state.diagnoses if d.status not in ("done", "failed")]

    def job_ids(self, limit: int = 200) -> list[str]:
        """Job ids of the live jobs on disk and in memory, most recently changed first (at most ``limit``)."""
        found: dict[str, float] = {}
        try:
            entries = list(self.root.iterdir()) if self.root.is_dir() else []
        except OSError:
            entries = []
        for d in entries:
            sp = d / STATE_FILE
            with contextlib.suppress(OSError, ValueError):
                mtime = sp.stat().st_mtime
                job_id = json.loads(sp.read_bytes()).get("job_id")
                if isinstance(job_id, str):
                    found[job_id] = mtime
        with self._lock:
            for job_id in self._jobs:
                found.setdefault(job_id, self.clock())
        return [j for j, _ in sorted(found.items(), key=lambda kv: -kv[1])][:limit]


class _Scheduler:
    """One daemon thread running ``fire(job_id)`` when a job's (re)set delay has passed (debounce)."""

    def __init__(self, fire: Callable[[str], None]) -> None:
        self.fire = fire
        self._due: dict[str, float] = {}
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def schedule(self, job_id: str, delay_s: float, keep_earlier: bool = False) -> None:
        """Run ``fire(job_id)`` ``delay_s`` from now, replacing the job's pending time (the debounce), or only
        when that is later (``keep_earlier``)."""
        with self._cv:
            if self._closed:
                return
            due = time.monotonic() + max(0.0, delay_s)
            if keep_earlier and job_id in self._due:
                due = min(due, self._due[job_id])
            self._due[job_id] = due
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="diag-live-debounce", daemon=True)
                self._thread.start()
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._due.clear()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._closed:
                    now = time.monotonic()
                    ready = [j for j, t in self._due.items() if t <= now]
                    if ready:
                        for j in ready:
                            del self._due[j]
                        break
                    self._cv.wait(min(self._due.values()) - now if self._due else None)
                if self._closed:
                    return
            for job_id in ready:
                try:
                    self.fire(job_id)
                except Exception:  # noqa: BLE001 - one job's failure must not stop the timer
                    log.exception("live job %s: scheduled diagnosis failed", job_id)


__all__ = [
    "MAX_PENDING_CHARS", "MAX_RESTART_MARKS", "RESERVED", "STATE_FILE", "AgentState", "DiagnosisRef", "FileState",
    "JobState", "LiveAgentView",
    "FinalFn", "LiveJobView", "LiveJobs", "LiveRefused", "LiveSettings", "SeqGap", "SubmitFn", "folder_name", "has_error_line",
    "RestartMark", "inside", "redact_block",
]
