"""What a node agent (``diag watch``) sends to the service: one model for both sides.

An agent watches the workers of one job on one node and sends :class:`AgentBatch` es to
``POST /v1/live/jobs/{job_id}/batches`` in order. Each batch carries the agent's own sequence number
(``seq``, from 0, no gaps): the service applies a batch once and acknowledges a batch it has already
applied again without applying it twice, so an agent that lost an answer (or spooled batches while the
service was away) simply resends. Nothing in a batch is trusted: sizes are bounded by the model and
text is redacted by the service before it is stored.

* ``events``: lifecycle events in the ETPR vocabulary (``docs/etpr.md``: ``started``, ``first_step``,
  ``progress``, ``checkpoint_saved``, ``failure``, ``hang_detected``, ``slow_detected``, ``restart``,
  ``finished``), plus ``heartbeat`` (the agent is alive) and ``worker`` (a worker process and its ranks),
  which are not ETPR events.
* ``logs``: new bytes of the workers' log files, as text, by path relative to the watched folder.
* ``stacks``: stack samples of local ranks (py-spy ``dump --json`` or text) taken while the job
  looks hung; one snapshot is the samples of one ``snapshot`` number.
* ``steps``: per-rank step records in the lab's timing format (``docs/slow.md``).
* ``fr``: Flight Recorder dumps the job wrote (when it enables them), one file per rank.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diag_service.domain import JOB_ID_PATTERN

#: Bounds of one batch (the service refuses a larger one with 413/422); the agent splits to stay below.
MAX_BATCH_ITEMS = 2_000
MAX_TEXT_CHARS = 1 << 20  # one log chunk or stack sample
MAX_BATCH_CHARS = 8 << 20  # all text of one batch
#: Rank and step bounds, as for timing feeds (a rank id beyond this is an input error, not an allocation).
MAX_RANK = 1 << 20
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
#: A path relative to the watched folder (checked by :func:`relative_path`).
MAX_PATH_CHARS = 512


def relative_path(value: str) -> str:
    """``value`` if it is a POSIX path relative to the watched folder: not empty, at most
    :data:`MAX_PATH_CHARS`, no leading ``/``, no ``..`` or empty segment, no backslash or NUL.
    Raises ``ValueError`` otherwise."""
    parts = value.split("/")
    if (not value or len(value) > MAX_PATH_CHARS or value.startswith("/") or "\\" in value or "\x00" in value
            or any(part in ("", ".", "..") for part in parts)):
        raise ValueError(f"not a relative path inside the watched folder: {value[:80]!r}")
    return value


class LiveEventKind(StrEnum):
    STARTED = "started"
    FIRST_STEP = "first_step"
    PROGRESS = "progress"
    CHECKPOINT_SAVED = "checkpoint_saved"
    FAILURE = "failure"
    HANG_DETECTED = "hang_detected"
    SLOW_DETECTED = "slow_detected"
    RESTART = "restart"
    FINISHED = "finished"
    HEARTBEAT = "heartbeat"
    WORKER = "worker"  # a worker process seen: its global ``rank``, ``local_rank`` and ``pid`` (not an ETPR event)
    # a checkpoint or evaluation phase began on this node (``duration``: the agent's stretched hang timeout in
    # seconds; ``cause``: the line); the service tells the job's other agents (not an ETPR event)
    PHASE = "phase"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveEvent(_Strict):
    """One lifecycle event seen by the agent. ``time``: unix seconds when it happened (for ``failure`` and
    ``hang_detected`` the detection time; ``onset_time`` is when the fault began, e.g. the last progress)."""

    event: LiveEventKind
    time: float = Field(ge=0, allow_inf_nan=False)
    onset_time: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    step: int | None = Field(default=None, ge=0)
    rank: int | None = Field(default=None, ge=0, le=MAX_RANK)
    local_rank: int | None = Field(default=None, ge=0, le=MAX_RANK)
    pid: int | None = Field(default=None, ge=0)
    exitcode: int | None = None
    duration: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    status: str | None = Field(default=None, max_length=64)
    cause: str | None = Field(default=None, max_length=2_000)


class LogChunk(_Strict):
    """New text of one log file: ``offset`` is the byte offset of ``text`` in the file (a file that shrank
    was truncated or rotated: its chunks start again at 0 with ``restarted`` set)."""

    path: str = Field(max_length=MAX_PATH_CHARS)
    offset: int = Field(ge=0)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    restarted: bool = False
    rank: int | None = Field(default=None, ge=0, le=MAX_RANK)
    local_rank: int | None = Field(default=None, ge=0, le=MAX_RANK)

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        return relative_path(v)


class StackSample(_Strict):
    """One stack dump of one rank. ``fmt``: ``py-spy-json`` (``py-spy dump --json``), ``py-spy`` (its text),
    or ``faulthandler``."""

    snapshot: int = Field(ge=0)
    time: float = Field(ge=0, allow_inf_nan=False)
    rank: int = Field(ge=0, le=MAX_RANK)
    local_rank: int | None = Field(default=None, ge=0, le=MAX_RANK)
    pid: int = Field(ge=0)
    fmt: str = Field(pattern=r"^(py-spy-json|py-spy|faulthandler)$")
    text: str = Field(max_length=MAX_TEXT_CHARS)


#: One Flight Recorder dump, raw bytes (PyTorch's ``nccl_trace_rank_<R>`` pickles are tens of kilobytes).
MAX_FR_BYTES = 4 << 20


class FrDump(_Strict):
    """One rank's Flight Recorder dump as the job wrote it (``TORCH_FR_DUMP_TEMP_FILE`` + rank, a pickle or
    JSON), base64 in ``data``; ``name``: its file name, which ends in the rank (``nccl_trace_rank_3``). The
    service stores it as it is and never unpickles it (the hang analysis reads it with a restricted reader)."""

    rank: int = Field(ge=0, le=MAX_RANK)
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    time: float = Field(ge=0, allow_inf_nan=False)
    data: str = Field(max_length=(MAX_FR_BYTES * 4) // 3 + 4)


class AgentBatch(_Strict):
    """What one agent sends in one request (see the module docstring)."""

    agent_id: str = Field(pattern=NAME_PATTERN, description="Stable per agent process: host:pid by default.")
    node: str = Field(pattern=NAME_PATTERN, description="The node the agent watches (its host name by default).")
    seq: int = Field(ge=0, description="The agent's batch number: 0, 1, 2, ... with no gaps.")
    sent: float = Field(ge=0, allow_inf_nan=False, description="Unix seconds when the batch was (first) sent.")
    events: list[LiveEvent] = Field(default_factory=list, max_length=MAX_BATCH_ITEMS)
    logs: list[LogChunk] = Field(default_factory=list, max_length=MAX_BATCH_ITEMS)
    stacks: list[StackSample] = Field(default_factory=list, max_length=MAX_BATCH_ITEMS)
    steps: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_BATCH_ITEMS)
    fr: list[FrDump] = Field(default_factory=list, max_length=64)

    def chars(self) -> int:
        """Characters of text carried (log chunks, stack samples, Flight Recorder dumps in base64)."""
        return (sum(len(c.text) for c in self.logs) + sum(len(s.text) for s in self.stacks)
                + sum(len(f.data) for f in self.fr))


class BatchAck(_Strict):
    """The service's answer: ``applied`` False when the batch had been applied before (a resend)."""

    job_id: str = Field(pattern=JOB_ID_PATTERN)
    seq: int
    applied: bool
    status: str = Field(description="The live job's state: running, failed, hung, slow, finished.")
    diagnosis_id: str | None = None
    heartbeat_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, description=(
        "Seconds between heartbeats the service expects (its live.heartbeat_s; an agent silent for "
        "live.stale_after of them is stale): the agent adopts it."))
    job_phase_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, description=(
        "Seconds left of a checkpoint or evaluation phase that an agent of the job reported: ranks without a step "
        "meanwhile are waiting for it (rank 0 saving, the others in the next collective), not hung."))


__all__ = [
    "MAX_BATCH_CHARS", "MAX_BATCH_ITEMS", "MAX_FR_BYTES", "MAX_PATH_CHARS", "MAX_RANK", "MAX_TEXT_CHARS", "AgentBatch",
    "BatchAck", "FrDump", "LiveEvent", "LiveEventKind", "LogChunk", "StackSample", "relative_path",
]
