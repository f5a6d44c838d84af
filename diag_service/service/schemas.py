"""Request and response bodies of the HTTP API. Results are the shared models of :mod:`diag_service.domain`
(and the analyzers' reports); these only wrap them with job state and links."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from diag_service.domain import JOB_ID_PATTERN, Category, Diagnosis, HangReport, RecoveryLevel
from diag_service.recovery.history import NodeOffender
from diag_service.slow import SlowAlarm, SlowReport

_ID = JOB_ID_PATTERN


class Links(BaseModel):
    self: str
    page: str | None = None


class JobState(BaseModel):
    """State of one job. ``error`` says why a failed job failed; ``error_status`` is the matching HTTP status."""

    id: str
    kind: str
    status: Literal["queued", "running", "done", "failed"]
    job_id: str | None = None
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    error: str | None = None
    error_status: int | None = None
    links: Links


class Accepted(JobState):
    """Returned with 202: the work is queued; poll ``links.self``."""

    detail: str = "queued; poll links.self for the result"


class FeedbackOut(BaseModel):
    id: int
    verdict: str
    category: str
    root_cause: str | None = None
    action: str | None = None
    level: str | None = None
    who: str | None = None
    source: str
    created_at: float
    kb_record_id: str | None = None
    kb_error: str | None = None


class DiagnosisEnvelope(JobState):
    """A diagnosis job: its state and, once done, the :class:`~diag_service.domain.Diagnosis`."""

    diagnosis: Diagnosis | None = None
    feedback: list[FeedbackOut] = Field(default_factory=list)


class DiagnosisSummary(BaseModel):
    id: str
    status: str
    job_id: str | None = None
    category: str | None = None
    failure_mode: str | None = None
    summary: str | None = None
    created_at: float
    finished_at: float | None = None
    error: str | None = None


class DiagnosisList(BaseModel):
    items: list[DiagnosisSummary]
    limit: int
    offset: int


class HangEnvelope(JobState):
    report: HangReport | None = None


class SlowEnvelope(JobState):
    report: SlowReport | None = None


class EtprEnvelope(JobState):
    report: dict[str, Any] | None = Field(default=None, description="diag_service.etpr.EtprReport as JSON.")


class JobEnvelope(JobState):
    result: dict[str, Any] | None = None


class DiagnosePathBody(BaseModel):
    """Diagnose a bundle already on the server: ``path`` must resolve under an allowed root."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=4096)
    job_id: str | None = Field(default=None, pattern=_ID)
    exclude: list[str] = Field(default_factory=list, max_length=64)
    wait: bool = Field(default=True, description="Wait for the result (up to sync_wait_s); false: 202 at once.")


class HangPathBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=4096, description="Stack-dump folder under an allowed root.")
    logs: str | None = Field(default=None, min_length=1, max_length=4096, description=(
        "The job's logs (a folder or file under an allowed root): when they show the hang (collective timeouts), "
        "fewer snapshots place the ranks; one snapshot is enough."))
    job_id: str | None = Field(default=None, pattern=_ID)
    min_stuck_snapshots: int = Field(default=3, ge=2, le=1000)


class SlowBody(BaseModel):
    """Batch fail-slow analysis: step ``records`` (lab format) or a ``path`` under an allowed root."""

    model_config = ConfigDict(extra="forbid")

    records: list[dict[str, Any]] | None = Field(default=None, max_length=2_000_000)
    path: str | None = Field(default=None, min_length=1, max_length=4096)
    job_id: str | None = Field(default=None, pattern=_ID)
    world_size: int | None = Field(default=None, ge=1, le=1_000_000)


class StepsBody(BaseModel):
    """Step records of a running job, in any grouping.

    Lab format: ``{"rank", "step", "start", "end", "compute_s", "comm_s", "data_s", "node"}``, optionally
    ``comm_wait_s`` (a collective trace's wait for the last peer; see ``diag_service.slow.feeds``).
    """

    model_config = ConfigDict(extra="forbid")

    records: list[dict[str, Any]] = Field(max_length=1_000_000)
    world_size: int | None = Field(default=None, ge=1, le=1_000_000)


class StepsResult(BaseModel):
    job_id: str
    alarms: list[SlowAlarm]
    accepted: int


class EtprBody(BaseModel):
    """Lifecycle events (``diag_service.etpr.EtprEvent`` fields: job, event, time, gpus, ...)."""

    model_config = ConfigDict(extra="forbid")

    events: list[dict[str, Any]] = Field(min_length=1, max_length=2_000_000)
    by: Literal["category", "failure_mode", "node", "week", "cause"] = "category"
    slow_tolerance: float = Field(default=0.05, ge=0, lt=1)


class FeedbackBody(BaseModel):
    """Confirm a diagnosis, or correct it (``category`` and usually ``root_cause`` and ``action``)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["confirm", "correct"]
    category: Category | None = None
    root_cause: str | None = Field(default=None, max_length=4000)
    action: str | None = Field(default=None, max_length=2000)
    level: RecoveryLevel | None = None
    who: str | None = Field(default=None, max_length=256)


class FeedbackResult(BaseModel):
    feedback: FeedbackOut
    kb_record_id: str | None = None
    kb_merged: bool | None = None
    kb_error: str | None = None


class KBSearchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=200_000, description="Log lines as the framework printed them.")
    k: int = Field(default=5, ge=1, le=100)


class KBAddBody(BaseModel):
    """Add a past incident from a stored diagnosis (by id) with what an operator says about it."""

    model_config = ConfigDict(extra="forbid")

    diagnosis_id: str = Field(min_length=1, max_length=64)
    category: Category | None = None
    root_cause: str | None = Field(default=None, max_length=4000)
    action: str | None = Field(default=None, max_length=2000)
    level: RecoveryLevel | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, Any] = Field(default_factory=dict)


class OffenderList(BaseModel):
    """``GET /v1/nodes/offenders``: nodes named in the failures of ``threshold`` or more distinct jobs within the
    last ``window_days`` (the recovery policy's ``history.lemon_node_faults`` and ``history.window_days``), from the
    service's recovery history, most jobs first."""

    window_days: float
    threshold: int
    items: list[NodeOffender]
