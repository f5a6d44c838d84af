"""ETPR vocabulary: the lifecycle event schema, the loss buckets, and the report models.

Events are JSON Lines, one object per event (see ``docs/etpr.md`` for the full table)::

    {"job": "j1", "event": "allocated", "time": 1700000000.0, "gpus": 64}
    {"job": "j1", "event": "progress", "time": 1700000900.0, "step": 120, "throughput": 3.9}
    {"job": "j1", "event": "failure", "time": 1700003600.0, "mode": "fail_stop", "category": "network",
     "node": "n17", "onset_time": 1700003540.0}

All times are unix seconds, all durations seconds. GPU time is GPU-seconds (GPUs x seconds). The
lab's ``events.jsonl`` (no ``job``, no ``gpus``) is a subset and is read by
:func:`diag_service.etpr.sources.lab.load_lab_run`.

:class:`EtprEvent` documents and validates one event; bulk input is validated column-wise with the same
rules by :func:`diag_service.etpr.loaders.normalize_events` (a million jobs do not go through pydantic).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from diag_service.domain import Category, FailureMode

ETPR_SCHEMA_VERSION = "1.0"


class EventType(StrEnum):
    """Lifecycle events of a training job (``event`` field)."""

    SUBMITTED = "submitted"  # the job entered the queue
    ALLOCATED = "allocated"  # resources granted: allocated GPU time starts here
    STARTED = "started"  # processes/containers launched (an attempt's environment set-up starts)
    CHECKPOINT_LOADED = "checkpoint_loaded"  # checkpoint restored; optional duration (s) of the load
    FIRST_STEP = "first_step"  # the attempt's first training step completed: productive time starts
    PROGRESS = "progress"  # periodic sample: step, throughput (any unit, e.g. samples/s) or ratio r
    CHECKPOINT_SAVED = "checkpoint_saved"  # checkpoint written at step; optional blocking duration (s)
    FAILURE = "failure"  # failure detected (time = detection); optional onset_time, mode, category, node
    HANG_DETECTED = "hang_detected"  # no progress detected; onset_time (or last_progress_time) = hang start
    SLOW_DETECTED = "slow_detected"  # fail-slow episode starts; optional ratio r or slowdown x, node, category
    SLOW_RESOLVED = "slow_resolved"  # fail-slow episode ends (extension)
    DIAGNOSED = "diagnosed"  # root cause known; its mode/category/node override the failure's
    RESTART = "restart"  # relaunch issued (a new attempt begins); optional from_step, rollback_time
    FINISHED = "finished"  # the job ended and released its allocation (status: succeeded/failed)
    KILLED = "killed"  # the job was cancelled or preempted; the allocation is released
    RELEASED = "released"  # the allocation was released without ending the job (requeue; extension)


class Term(StrEnum):
    """The terms that allocated GPU time is split into (plus the two queue terms outside it)."""

    PRODUCTIVE = "productive"
    PRE_EXECUTION = "pre_execution"
    UNPRODUCTIVE = "unproductive"
    QUALITY = "reduced_quality"
    QUEUE = "queue"  # outside allocated time


class Bucket(StrEnum):
    """Leaf buckets of the ledger. Each belongs to exactly one :class:`Term`."""

    PRODUCTIVE = "productive"
    SCHEDULING = "scheduling"  # allocated -> started
    INIT = "init"  # started/restart -> first_step, minus the checkpoint load
    CKPT_LOAD = "ckpt_load"  # checkpoint_loaded.duration
    DETECTION = "detection"  # failure onset -> failure detected (fail-stop)
    HANG = "hang"  # hang onset (last progress) -> hang detected
    DIAGNOSIS = "diagnosis"  # detected -> diagnosed
    RECOVERY = "recovery"  # diagnosed (or detected, if no diagnosis) -> restart / release
    LOST_WORK = "lost_work"  # productive time since the checkpoint that the restart resumed from
    CKPT_STALL = "ckpt_stall"  # checkpoint_saved.duration (training blocked while saving)
    SLOW = "slow"  # integral of (1 - r) over productive time
    QUEUE = "queue"  # submitted -> first allocation (not allocated time)
    REQUEUE = "requeue"  # released -> allocated again (not allocated time)


BUCKET_TERM: dict[Bucket, Term] = {
    Bucket.PRODUCTIVE: Term.PRODUCTIVE,
    Bucket.SCHEDULING: Term.PRE_EXECUTION,
    Bucket.INIT: Term.PRE_EXECUTION,
    Bucket.CKPT_LOAD: Term.PRE_EXECUTION,
    Bucket.DETECTION: Term.UNPRODUCTIVE,
    Bucket.HANG: Term.UNPRODUCTIVE,
    Bucket.DIAGNOSIS: Term.UNPRODUCTIVE,
    Bucket.RECOVERY: Term.UNPRODUCTIVE,
    Bucket.LOST_WORK: Term.UNPRODUCTIVE,
    Bucket.CKPT_STALL: Term.UNPRODUCTIVE,
    Bucket.SLOW: Term.QUALITY,
    Bucket.QUEUE: Term.QUEUE,
    Bucket.REQUEUE: Term.QUEUE,
}

#: Buckets that make up allocated GPU time (everything except the queue terms).
ALLOCATED_BUCKETS: tuple[Bucket, ...] = tuple(b for b, t in BUCKET_TERM.items() if t is not Term.QUEUE)
LOSS_BUCKETS: tuple[Bucket, ...] = tuple(b for b in ALLOCATED_BUCKETS if b is not Bucket.PRODUCTIVE)


class Phase(StrEnum):
    """Where in a failure's life (or the job's life) a loss happened, for attribution."""

    STARTUP = "startup"  # pre-execution of an attempt not caused by a failure
    REINIT = "reinit"  # pre-execution of an attempt that a failure (or kill) caused
    DETECTION = "detection"
    DIAGNOSIS = "diagnosis"
    RECOVERY = "recovery"
    LOST_WORK = "lost_work"
    CHECKPOINT = "checkpoint"
    SLOW = "slow"
    PRODUCTIVE = "productive"
    QUEUE = "queue"


#: Attribution labels used besides :class:`FailureMode` and :class:`Category` values.
NO_FAILURE = "none"  # mode/category of losses that no failure caused (start-up, checkpoint stalls)
KILLED = "killed"  # mode of a job cancelled or preempted while running
UNKNOWN_NODE = "unknown"

#: Canonical event columns after normalisation, with their polars dtypes (by name).
EVENT_COLUMNS: dict[str, str] = {
    "job": "str",
    "event": "str",
    "time": "f64",
    "gpus": "f64",
    "step": "f64",
    "throughput": "f64",
    "expected_throughput": "f64",
    "ratio": "f64",
    "slowdown": "f64",
    "duration": "f64",
    "onset_time": "f64",
    "rollback_time": "f64",
    "from_step": "f64",
    "mode": "str",
    "category": "str",
    "node": "str",
    "cause": "str",
    "status": "str",
}

#: Field aliases accepted on input (left) and the canonical name they map to (right).
COLUMN_ALIASES: dict[str, str] = {
    "job_id": "job",
    "jobid": "job",
    "timestamp": "time",
    "ts": "time",
    "num_gpus": "gpus",
    "n_gpus": "gpus",
    "gpu_num": "gpus",
    "last_progress_time": "onset_time",
    "failure_mode": "mode",
    "reason": "cause",
    "subcategory": "cause",
}


class EtprEvent(BaseModel):
    """One lifecycle event. Unknown extra fields are kept and ignored by the accounting."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    job: str = Field(min_length=1, validation_alias=AliasChoices("job", "job_id"), description="Job id (alias job_id).")
    event: EventType
    time: float = Field(description="Unix seconds (UTC).", allow_inf_nan=False)
    gpus: int | None = Field(default=None, ge=1, description="GPUs held from this event on (alias num_gpus).")
    step: int | None = Field(default=None, ge=0, description="Training step (progress, checkpoint_saved).")
    throughput: float | None = Field(default=None, ge=0, description="Observed throughput (any unit, progress).")
    expected_throughput: float | None = Field(default=None, gt=0, description="Expected throughput, same unit.")
    ratio: float | None = Field(default=None, ge=0, description="r = observed / expected throughput, if known.")
    slowdown: float | None = Field(default=None, ge=1, description="Step-time slowdown x (r = 1/x), slow_detected.")
    duration: float | None = Field(default=None, ge=0, description="Seconds: checkpoint save/load blocking time.")
    onset_time: float | None = Field(default=None, description="Unix s when the fault began (failure, hang_detected).")
    rollback_time: float | None = Field(default=None, description="Unix s of the state a restart resumed from.")
    from_step: int | None = Field(default=None, ge=0, description="Step a restart resumed from (informational).")
    mode: FailureMode | None = None
    category: Category | None = None
    node: str | None = Field(default=None, description="Node blamed (failure, diagnosed, slow_detected).")
    cause: str | None = Field(default=None, description="Free-text finer cause (alias reason, subcategory).")
    status: str | None = Field(default=None, description="finished: succeeded | failed | ...")

    @field_validator("job", mode="before")
    @classmethod
    def _job_to_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v


class Issue(BaseModel):
    """A problem with the input (``warning``) or a documented default we applied (``assumption``)."""

    kind: str = Field(description="warning | assumption")
    code: str = Field(description="Stable identifier, e.g. out_of_order, duplicate_event.")
    message: str
    count: int = Field(default=1, description="How many rows or jobs it concerned.")
    examples: list[str] = Field(default_factory=list, description="Up to 5 job ids or line numbers.")


class BucketTotals(BaseModel):
    """GPU-seconds per bucket, and the derived ratios. Shares are fractions of allocated GPU time."""

    allocated_gpu_s: float
    queue_gpu_s: float = Field(description="Submitted -> first allocation, GPU-weighted (not allocated).")
    requeue_gpu_s: float = Field(description="Released -> allocated again, GPU-weighted (not allocated).")
    buckets_gpu_s: dict[str, float] = Field(description="Every allocated bucket, GPU-seconds.")
    terms_gpu_s: dict[str, float] = Field(description="productive, pre_execution, unproductive, reduced_quality.")
    etpr: float | None = Field(description="productive / allocated GPU time, in [0, 1]; None if nothing allocated.")
    ettr: float | None = Field(description="Meta-style ETTR (see docs/etpr.md), GPU-weighted.")
    goodput: dict[str, float | None] = Field(description="Google-style scheduling/runtime/program goodput.")
    badput_gpu_s: dict[str, float] = Field(description="Our loss in ml-goodput-measurement badput buckets.")


class JobAccount(BaseModel):
    """One job's ledger."""

    job: str
    gpus: float = Field(description="GPUs at the job's last event (GPU time uses the value in force).")
    attempts: int
    failures: int = Field(description="Failure/hang/kill episodes.")
    first_time: float
    last_time: float
    totals: BucketTotals
    wall_s: dict[str, float] = Field(description="Wall seconds per bucket (not GPU-weighted).")
    ettr_wall: float | None = Field(description="Meta ETTR of this job, wall time.")


class AttributionRow(BaseModel):
    """GPU-seconds of loss for one (term, bucket, phase, mode, category, node) cell."""

    term: str
    bucket: str
    phase: str
    mode: str
    category: str
    node: str
    cause: str
    gpu_s: float
    share_of_allocated: float


class ParetoRow(BaseModel):
    key: str
    gpu_s: float
    share_of_loss: float
    cumulative_share: float


class WhatIf(BaseModel):
    """ETPR if some loss buckets shrank by a factor, with the same useful work done."""

    name: str
    description: str
    factors: dict[str, float] = Field(description="Bucket -> multiplier applied to its GPU time.")
    saved_gpu_s: float
    etpr: float | None
    delta_pp: float | None = Field(description="ETPR change in percentage points.")


class EtprReport(BaseModel):
    """What ``diag etpr`` returns: cluster totals, attribution, levers, per-job ledgers, and input issues."""

    schema_version: str = ETPR_SCHEMA_VERSION
    source: str
    jobs: int
    events: int
    cluster: BucketTotals
    job_etpr_mean: float | None = Field(description="Unweighted mean of per-job ETPR (each job counts once).")
    job_ettr_mean: float | None = Field(description="Unweighted mean of per-job wall ETTR.")
    by: str = Field(description="Dimension of the Pareto: category | failure_mode | node | week | cause.")
    pareto: list[ParetoRow]
    mode_phase_gpu_s: dict[str, dict[str, float]] = Field(description="Failure mode -> phase -> GPU-seconds of loss.")
    attribution: list[AttributionRow] = Field(description="Largest attribution cells (at most 200).")
    what_if: list[WhatIf]
    job_accounts: list[JobAccount] = Field(description="Per-job ledgers (all jobs, or the most lossy if many).")
    job_accounts_truncated: bool = False
    issues: list[Issue] = Field(default_factory=list)
    timings_s: dict[str, float] = Field(default_factory=dict)
