"""Recovery policy file: schema, validation with line numbers, and rule matching."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diag_service.domain import Category, FailureMode, RecoveryLevel, Responsible
from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin
from diag_service.yamlio import load_yaml_model


class PolicyError(DiagError):
    """The recovery policy file is malformed; the message names the file and line."""

    kind = ErrorKind.CONFIG


class Costs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank_restart_s: float = Field(120, ge=0)
    job_restart_s: float = Field(600, ge=0)
    checkpoint_reload_s: float = Field(180, ge=0)
    checkpoint_interval_s: float = Field(3600, gt=0)
    node_replacement_s: float = Field(1800, ge=0)


class HistorySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window_days: float = Field(7, gt=0)
    #: a node named in failures of this many distinct jobs within ``window_days`` is a repeat offender (a lemon node)
    lemon_node_faults: int = Field(3, ge=1)
    #: this many restarts in a row, each without training progress after it, are a restart storm
    storm_restarts: int = Field(3, ge=1)
    backoff_base_s: float = Field(60, ge=0)
    backoff_max_s: float = Field(1800, ge=0)


class When(BaseModel):
    """Conditions of a rule; all must hold; lists mean any-of; absent means don't care."""

    model_config = ConfigDict(extra="forbid")

    failure_mode: list[FailureMode] | None = None
    category: list[Category] | None = None
    signature_ids: list[str] | None = None
    not_signature_ids: list[str] | None = None  # the primary hit is none of these (or there is none)
    trained: bool | None = None  # Diagnosis.trained: a training step (loss, step counter, step checkpoint) before it
    #: the logs read hold at most this many lines (Diagnosis.input.lines): an excerpt, whose lack of training steps
    #: says nothing of whether the job had trained
    log_lines_at_most: int | None = Field(default=None, ge=0)
    xid_codes: list[int] | None = None
    min_confidence: float | None = Field(default=None, ge=0, le=1)
    max_confidence: float | None = Field(default=None, ge=0, le=1)
    has_faulty_nodes: bool | None = None
    has_evidence: bool | None = None  # any failure event, signature hit, hang or slow finding
    #: the logs show a process of the job ending: an exit code or signal, a launcher's failure table
    #: (events of kind ``exit`` or ``elastic_summary``)
    exited: bool | None = None
    summary_matches: str | None = None
    job_restarts_at_least: int | None = Field(default=None, ge=0)
    same_cause_restarts_at_least: int | None = Field(default=None, ge=0)
    node_faults_at_least: int | None = Field(default=None, ge=1)
    #: the job's last ``history.storm_restarts`` restarts came without training progress (a restart storm)
    restart_storm: bool | None = None
    #: a faulty node was named in failures of ``history.lemon_node_faults`` distinct jobs (this one included)
    #: within ``history.window_days`` (a repeat offender)
    repeat_offender: bool | None = None

    @field_validator("summary_matches")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {exc}") from exc
        return v


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    when: When
    level: RecoveryLevel
    action: str
    timing: str = Field("now", pattern=r"^(now|next_checkpoint)$")
    backoff: bool = False
    #: Who has to act under this rule's action (``user``: the job owner); None keeps the diagnosis' own.
    #: The plan carries it and the diagnosis' ``responsible`` follows it, so the two never disagree.
    responsible: Responsible | None = None


def _regex(v: str) -> str:
    try:
        re.compile(v)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return v


class JobIdRule(BaseModel):
    """What a platform accepts as a job id in its commands: ``pattern`` (a full-match regex), ``what`` it is
    called and where to find the real one (``use``), for the comment that replaces an invalid id."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    what: str
    use: str

    _compiles = field_validator("pattern")(lambda v: _regex(v))


class NameRule(BaseModel):
    """What a platform accepts as one name (a node, a namespace) in its commands: ``pattern`` (a
    full-match regex; it must not accept a leading ``-``) and ``what`` it is called, for the comment
    that replaces a value that does not match."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    what: str

    @field_validator("pattern")
    @classmethod
    def _no_options(cls, v: str) -> str:
        rx = re.compile(_regex(v))
        for probe in ("-", "--all", "-A", "--selector=x"):
            if rx.fullmatch(probe):
                raise ValueError(f"the pattern accepts {probe!r}: a name must never start with '-' (it would be an option)")
        return v


class NodeNameRule(NameRule):
    """A :class:`NameRule` for node names; ``hostlist: true`` when the platform's commands take Slurm
    hostlists (``gpu[001-004]``): a hostlist is counted, expanded and each of its names matched."""

    hostlist: bool = False


#: The rule for a platform the policy names no rule for: one DNS-like name, never an option.
FALLBACK_NAME = NameRule(pattern=r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,251}[A-Za-z0-9])?", what="a plain host or object name")


class Execution(BaseModel):
    """Whether ``diag serve`` may execute a live job's plan without a person: ``live`` (off by default) allows it
    for the final diagnosis of each incident, once, at the plan's ``levels`` only; the service's executor must be
    configured too (``DIAG_EXECUTOR=shell``). ``diag recover --execute`` (a person asking) is not bound by it."""

    model_config = ConfigDict(extra="forbid")

    live: bool = False
    levels: list[RecoveryLevel] = Field(default_factory=lambda: [RecoveryLevel.L1, RecoveryLevel.L2, RecoveryLevel.L3])


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    costs: Costs = Field(default_factory=Costs)
    history: HistorySettings = Field(default_factory=HistorySettings)
    rules: list[Rule] = Field(min_length=1)
    platforms: dict[str, dict[RecoveryLevel, list[str]]] = Field(default_factory=dict)
    job_ids: dict[str, JobIdRule] = Field(default_factory=dict)
    #: Node names from logs and feeds are untrusted: only names matching the platform's rule reach a
    #: command (:data:`FALLBACK_NAME` for a platform without one), and a plan touching more than
    #: ``max_nodes`` nodes (hostlists counted) is refused for execution and written as comments.
    node_names: dict[str, NodeNameRule] = Field(default_factory=dict)
    #: What each platform accepts as a namespace (the ``{namespace}`` of its commands).
    namespaces: dict[str, NameRule] = Field(default_factory=dict)
    max_nodes: int = Field(default=8, ge=1)
    #: Automatic execution of live plans (:class:`Execution`); none by default.
    execution: Execution = Field(default_factory=Execution)
    source: str = ""
    version_hash: str = ""

    @field_validator("rules")
    @classmethod
    def _unique(cls, rules: list[Rule]) -> list[Rule]:
        seen: set[str] = set()
        for r in rules:
            if r.id in seen:
                raise ValueError(f"rule id {r.id!r} used twice")
            seen.add(r.id)
        return rules


def default_policy_path() -> Path:
    """The built-in ``knowledge_base/recovery_policy.yaml``."""
    return builtin("knowledge_base", "recovery_policy.yaml")


def load_policy(path: str | Path | None = None) -> Policy:
    """Load and validate the recovery policy. Raises :class:`PolicyError` with file and line."""
    p = Path(path) if path is not None else default_policy_path()
    pol, text, _node = load_yaml_model(p, Policy, PolicyError)
    pol.source = str(p)
    pol.version_hash = hashlib.sha256(text.encode()).hexdigest()[:12]
    return pol
