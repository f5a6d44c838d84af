"""Domain vocabulary shared by every part of diag_service.

One module owns the terms of the field (failure modes, categories, evidence, events, diagnosis) so
that the pipeline stages, the analyzers and every interface (CLI, HTTP API, bot, batch labelling)
speak the same pydantic models and serialise to the same JSON.

The JSON Schema of :class:`Diagnosis` is exported to ``docs/schema/diagnosis.schema.json``
(``diag schema``); bump :data:`SCHEMA_VERSION` when a field changes meaning or disappears.
"""

from __future__ import annotations

import importlib
import re
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

if TYPE_CHECKING:
    from diag_service.slow.models import SlowReport

SCHEMA_VERSION = "1.1"  # 1.1: Diagnosis.slow is a typed SlowReport (the same JSON as before, validated)


#: What a diagnosis accepts as a faulty node's name: a host name (RFC 1123 labels, with '_' as some
#: clusters use), an IPv4 address, or a Slurm hostlist ("gpu[001-004],login1"); 253 characters at most
#: (RFC 1035's longest name). Names come from log text and timing feeds, which are untrusted: anything
#: else ("--all", "--selector=...", spaces, quotes, '/' or '$') is kept out of ``faulty_nodes``.
NODE_NAME = re.compile(r"(?=[^\n]{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9_.,\[\]-]*[A-Za-z0-9\]])?\Z")


#: Every machine's own loopback name or address (RFC 6761 reserves ``localhost``; /etc/hosts' usual aliases):
#: torchelastic's failure report prints ``host : localhost`` when a node has no other name, which names no node a
#: scheduler can cordon or replace.
LOOPBACK = re.compile(r"(?i)(?:localhost(?:\.localdomain)?6?|ip6-(?:localhost|loopback)|127(?:\.\d{1,3}){3})\.?\Z")


def node_names(names: list[str]) -> tuple[list[str], list[str]]:
    """``names`` split into those :data:`NODE_NAME` accepts and those it refuses (not host names, or a loopback
    name, :data:`LOOPBACK`), each in order, once."""
    ok: list[str] = []
    refused: list[str] = []
    for n in dict.fromkeys(names):
        (ok if NODE_NAME.match(n) and not LOOPBACK.match(n) else refused).append(n)
    return ok, refused


def refused_nodes_finding(refused: list[str]) -> str:
    """The finding that names node values kept out of ``faulty_nodes`` (each shown shortened, quoted)."""
    shown = ", ".join(repr(n[:80]) for n in refused[:4]) + (f" and {len(refused) - 4} more" if len(refused) > 4 else "")
    if all(LOOPBACK.match(n) for n in refused):
        return (f"Node name(s) {shown} in the logs are the machine's own loopback name, not a node a scheduler can "
                "act on: left out of faulty_nodes.")
    return f"Node name(s) {shown} in the logs are not host names: left out of faulty_nodes."


class FailureMode(StrEnum):
    """How a job lost productivity: it stopped, it stayed alive without progress, or it ran slow.

    ``none`` is a diagnosis's verdict only (never a signature's, an incident's or a scenario's): the logs show
    no failure and end with the run's own report of completion (``diag_service.extract.events.COMPLETION``).
    """

    FAIL_STOP = "fail_stop"
    FAIL_HANG = "fail_hang"
    FAIL_SLOW = "fail_slow"
    NONE = "none"


class Category(StrEnum):
    """What kind of fault caused the failure. ``unknown`` is an honest answer, not an error."""

    GPU_HARDWARE = "gpu_hardware"
    NETWORK = "network"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    USER_CODE = "user_code"
    CONFIG = "config"
    DATA = "data"
    STORAGE = "storage"
    FRAMEWORK = "framework"
    INFRASTRUCTURE = "infrastructure"
    UNKNOWN = "unknown"


class Responsible(StrEnum):
    """Who has to act: the platform (hardware, network, cluster software) or the job's owner."""

    PLATFORM = "platform"
    USER = "user"


#: Default owner of each category, used when a signature does not say otherwise. Hardware, fabric,
#: storage, cluster software and unexplained failures go to the platform's on-call; the job's code,
#: configuration, data and memory budget (GPU and host) go to its owner.
DEFAULT_RESPONSIBLE: dict[Category, Responsible] = {
    Category.GPU_HARDWARE: Responsible.PLATFORM,
    Category.NETWORK: Responsible.PLATFORM,
    Category.GPU_OOM: Responsible.USER,
    Category.HOST_OOM: Responsible.USER,
    Category.USER_CODE: Responsible.USER,
    Category.CONFIG: Responsible.USER,
    Category.DATA: Responsible.USER,
    Category.STORAGE: Responsible.PLATFORM,
    Category.FRAMEWORK: Responsible.PLATFORM,
    Category.INFRASTRUCTURE: Responsible.PLATFORM,
    Category.UNKNOWN: Responsible.PLATFORM,
}


class EventRole(StrEnum):
    """Where an event sits in a failure's causal chain.

    ``root``: names a cause by itself (a CUDA OOM, an Xid, a user exception).
    ``symptom``: what ranks print when *another* rank or component failed (collective watchdog
    timeouts, broken pipes, "closed by remote peer", SIGTERM sent by the agent).
    ``summary``: launcher epilogues that restate a failure (torchelastic ``ChildFailedError``).
    ``context``: useful but not a failure (a stack dump, a warning).
    """

    ROOT = "root"
    SYMPTOM = "symptom"
    SUMMARY = "summary"
    CONTEXT = "context"


class EventKind(StrEnum):
    """Shape of a candidate event found in the logs (stage 3, ``extract``)."""

    TRACEBACK = "traceback"
    EXCEPTION = "exception"
    CPP_FRAMES = "cpp_frames"
    NCCL = "nccl"
    KERNEL = "kernel"
    EXIT = "exit"
    ELASTIC_SUMMARY = "elastic_summary"
    STACK_DUMP = "stack_dump"
    PROGRESS = "progress"
    WARNING = "warning"
    ERROR_LINE = "error_line"


class Evidence(BaseModel):
    """One log line that supports a finding. ``timestamp`` is ISO-8601 (UTC if the log gave no zone)."""

    model_config = ConfigDict(frozen=True)

    file: str = Field(description="Path of the file inside the bundle, '/'-separated.")
    line: int = Field(description="1-based line number in that file.")
    rank: int | None = Field(default=None, description="Global rank that wrote the line, if known.")
    node: str | None = Field(default=None, description="Node (host) that wrote the line, if known.")
    timestamp: str | None = Field(default=None, description="ISO-8601 time of the line, if it had one.")
    timestamp_approx: bool = Field(
        default=False, description="The line had no time of its own: ``timestamp`` is the last earlier time of the "
        "same writer, a lower bound (the line was written at or after it).")
    text: str = Field(description="The (redacted) line, at most 2,000 characters.")


class SignatureHit(BaseModel):
    """A known failure signature (``knowledge_base/signatures/*.yaml``) matched by an event."""

    signature_id: str
    name: str
    failure_mode: FailureMode
    category: Category
    role: EventRole
    priority: int = Field(description="Higher wins when several root signatures compete (0-100).")
    confidence: float = Field(ge=0, le=1, description="How decisive the signature is on its own.")
    explanation: str
    source: str | None = Field(default=None, description="Vendor doc or public thread backing it.")
    details: dict[str, str] = Field(default_factory=dict, description="Named regex groups, e.g. Xid code.")
    template_ids: list[int] = Field(default_factory=list)
    ranks: list[int] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    first_timestamp: str | None = None
    first_timestamp_approx: bool = Field(default=False, description="Borrowed from an earlier line of the same writer.")


class EventTemplate(BaseModel):
    """One deduplicated event: every occurrence, on any rank, of one Drain3 template."""

    template_id: int
    template: str = Field(description="Drain3 template with masks such as <RANK>, <HEX>, <NUM>.")
    kind: EventKind
    role: EventRole
    count: int = Field(description="Occurrences across the whole bundle.")
    ranks: list[int] = Field(default_factory=list, description="Ranks it occurred on (at most 64 listed).")
    n_ranks: int = Field(default=0, description="Number of distinct ranks it occurred on.")
    nodes: list[str] = Field(default_factory=list, description="Nodes it occurred on (at most 64 listed).")
    first_timestamp: str | None = None
    first: Evidence = Field(description="Earliest occurrence (by time, then by position).")
    signature_ids: list[str] = Field(default_factory=list)
    suspicion: float = Field(default=0.0, description="Ranking score for unmatched events (0-1).")


class RootCause(BaseModel):
    summary: str = Field(description="The root cause in plain words, grounded in the evidence.")
    evidence: list[Evidence] = Field(default_factory=list)


class SimilarIncident(BaseModel):
    """A past incident from the knowledge base; ``score`` is cosine similarity in [-1, 1]."""

    incident_id: str
    title: str
    score: float
    category: Category
    root_cause: str
    action: str
    recovery_level: str | None = Field(default=None, description="L0-L4 of the action that fixed it.")
    count: int = Field(default=1, description="How many confirmed occurrences the record stands for.")


class RecoveryLevel(StrEnum):
    """Hierarchical recovery levels, cheapest first (as in production stability systems).

    L0 observe and continue; L1 restart the failed ranks in place (in-job restart); L2 restart the
    job from the last good checkpoint on the same nodes; L3 cordon/drain the faulty node(s), replace
    them and restart from checkpoint; L4 stop and hand to the job owner with a fix hint.
    """

    L0 = "L0"
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"
    L4 = "L4"


class CheckpointSeen(BaseModel):
    """The latest checkpoint save of a training step that the logs show with a time."""

    timestamp: str = Field(description="ISO-8601 time of the save line (UTC if the log gave no zone).")
    timestamp_approx: bool = Field(default=False, description=(
        "The save line had no time of its own: ``timestamp`` is the closest line above it that has one (a lower "
        "bound; ``before_failure_s`` is then an upper bound)."))
    step: int | None = Field(default=None, description="The step or iteration saved, when the line names it.")
    file: str = Field(description="Path of the file inside the bundle holding the line.")
    kind: Literal["saved", "resumed"] = Field(default="saved", description=(
        "'saved': the run wrote it; 'resumed': the run started from it (``Resuming from checkpoint at step 500``) and "
        "saved nothing later."))
    unsure_timestamp: str | None = Field(default=None, description=(
        "A later save reported done but not counted, because the failure is the storage's and no training step "
        "followed it (the rest of that checkpoint may not have been written): its ISO-8601 time."))
    unsure_step: int | None = Field(default=None, description="That later save's step, when its line names it.")
    before_failure_s: float | None = Field(default=None, description=(
        "Seconds of training after the save and before the job stopped progressing (its last progress line before "
        "the first failure line, else that line); None when the failure has no time or came before the save."))


class LostTime(BaseModel):
    """Estimated loss of one recovery option, in seconds of wall time and GPU-seconds."""

    restart_s: float = 0.0
    checkpoint_reload_s: float = 0.0
    lost_progress_s: float = 0.0
    lost_progress_basis: str = Field(default="policy", description=(
        "Where lost_progress_s comes from: 'logs' (the work since the last checkpoint save the logs show, "
        "Diagnosis.last_checkpoint), 'no_training' (the recovery rule decided on the logs showing no training step "
        "before the failure: nothing trained is lost) or 'policy' (half the policy's checkpoint interval)."))
    node_replacement_s: float = 0.0
    total_s: float = 0.0
    gpu_seconds: float | None = Field(default=None, description="total_s x GPUs, when the GPU count is known.")
    unbounded: bool = Field(default=False, description="True for L4: the job waits for its owner.")


class RecoveryOption(BaseModel):
    level: RecoveryLevel
    action: str
    lost: LostTime


class RecoveryPlan(BaseModel):
    """The recommended recovery for one diagnosis. Nothing here has been executed unless ``executed``."""

    level: RecoveryLevel
    action: str = Field(description="What to do, in words.")
    rule_id: str = Field(description="Policy rule that decided (knowledge_base/recovery_policy.yaml).")
    reason: str
    timing: str = Field(default="now", description="'now' or 'next_checkpoint'.")
    backoff_s: float = 0.0
    target_nodes: list[str] = Field(default_factory=list)
    target_ranks: list[int] = Field(default_factory=list)
    fix_hint: str | None = None
    responsible: Responsible | None = Field(default=None, description="Who has to act under this plan: the rule's "
                                            "own (e.g. 'user' for a hand-off to the job owner), else the diagnosis'.")
    platform: str
    commands: list[str] = Field(default_factory=list, description="Dry-run commands; never run unless configured.")
    options: list[RecoveryOption] = Field(default_factory=list, description="Every level's estimated cost.")
    escalated_from: RecoveryLevel | None = None
    history_note: str | None = None
    idempotency_key: str
    executed: bool = False
    refused: str | None = Field(default=None, description="Why this plan must not be executed as it stands (e.g. more "
                                "nodes than the policy's max_nodes); its commands are then comments for a person.")


#: The first words of the findings of the watchers (a restart storm, a repeat-offender node); an announcement
#: shows the findings that begin with one of them (:meth:`Diagnosis.recurring_findings`).
RESTART_STORM = "restart storm"
REPEAT_OFFENDER = "repeat-offender node"


def _duration(seconds: float) -> str:
    """``45 s``, ``38 min``, ``3.2 h``: a span for a sentence."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class JobRestarts(BaseModel):
    """The restarts of the job a diagnosis is of, from its lifecycle events (a live job's ``restart``,
    ``first_step`` and ``progress`` events, kept by the service's live registry). Times: unix seconds (the agents'
    clocks); steps: training steps."""

    count: int = Field(ge=0, description="Restarts of the job so far (one per relaunch, however many agents saw it).")
    without_progress: int = Field(default=0, ge=0, description=(
        "The latest restarts in a row after each of which no training step beyond the highest step seen before it "
        "came (a first_step or progress event without a step counts as progress)."))
    first_time: float | None = Field(default=None, description="The first of those restarts.")
    last_time: float | None = Field(default=None, description="The last of those restarts.")
    highest_step: int | None = Field(default=None, description="The highest training step the job reported.")
    source: str = Field(default="live", description=(
        "Where the restarts were counted: live (the agents' events) or logs (torchelastic's attempt_N folders in the "
        "bundle, diag_service.localize.attempts)."))

    def storm(self, at_least: int) -> str | None:
        """The restart-storm finding when ``without_progress`` is ``at_least`` or more (the recovery policy's
        ``history.storm_restarts``), e.g. ``restart storm: 4 restarts in 38 min without a training step``; else
        None."""
        n = self.without_progress
        if n < max(1, at_least):
            return None
        span = ""
        if self.first_time is not None and self.last_time is not None and n > 1:
            span = f" in {_duration(max(0.0, self.last_time - self.first_time))}"
        what = ("without a training step" if self.highest_step is None
                else f"without training progress (no step beyond {self.highest_step})")
        return f"{RESTART_STORM}: {n} restarts{span} {what}"


class StackGroup(BaseModel):
    """Ranks whose main threads are stuck at the same place."""

    signature: str = Field(description="Normalised stack, innermost frame first, ' < ' separated.")
    ranks: list[int]
    top_frames: list[str] = Field(description="Innermost frames as 'function (file:line)'.")
    in_collective: bool = Field(description="The innermost meaningful frames are a collective or its wait.")
    collective: str | None = None


class HangSuspect(BaseModel):
    rank: int
    node: str | None = None
    score: float = Field(ge=0, le=1)
    reason: str
    top_frames: list[str] = Field(default_factory=list)
    kind: str | None = Field(default=None, description=(
        "Why it is suspected. From stacks: 'outside_collective' (stuck in no collective while others wait), "
        "'collective_mismatch' (stuck in another collective than the majority), 'call_site_mismatch' (the same "
        "collective from another place), 'call_order_mismatch' (as many ranks in the same collective called from "
        "another place: the ranks issue their collectives in different orders), 'split_mismatch' (as many ranks in "
        "another collective: the code took different paths, which side left the common path untold), "
        "'same_collective', 'moving' (still "
        "running), 'no_stack'. From Flight "
        "Recorder: its culprit kinds ('not_joined', 'mismatch', 'no_dump', 'p2p', 'cycle')."))

    #: The most a culprit's score lends an answer's confidence: the stacks say where a hang stood, not why (docs/hang.md).
    CONFIDENCE_CAP: ClassVar[float] = 0.45
    #: The score from which a suspect is the culprit (named first failing rank, worded "Culprit"): below it as many
    #: ranks wait elsewhere and the stacks do not single it out (docs/hang.md).
    SINGLED_OUT: ClassVar[float] = 0.7

    def confidence(self) -> float:
        """The confidence this culprit lends an answer: half its score, at most :attr:`CONFIDENCE_CAP`."""
        return round(min(self.CONFIDENCE_CAP, self.score / 2), 3)


class CollectiveStall(BaseModel):
    """The first collective of one process group that did not complete on every member."""

    group: str = Field(description="Process group name as Flight Recorder records it ('0' is the default group).")
    group_desc: str = ""
    group_ranks: list[int]
    seq: int = Field(description="Collective sequence id within the group.")
    op: str = Field(description="The op most members enqueued, e.g. 'all_reduce'.")
    sizes: str = ""
    joined: list[int] = Field(description="Members that enqueued this collective.")
    missing: list[int] = Field(description="Members that never enqueued it.")
    mismatched: list[int] = Field(
        default_factory=list, description="Members that enqueued another op or other sizes at this seq."
    )
    mismatch_detail: str = ""
    where: str = Field(default="", description="Call site of the collective on a joined rank (innermost user frame).")
    since: float | None = Field(
        default=None, description="Unix seconds: the earliest time a member enqueued it (Flight Recorder's "
                                  "time_created_ns), when the dumps record it: the stall began no later.")


class P2PStall(BaseModel):
    """A send/recv enqueued and not completed whose peer never posted the matching op."""

    group: str
    rank: int
    op: str
    peer: int
    p2p_seq: int | None = None


class FRCulprit(BaseModel):
    """A rank the Flight Recorder view blames. ``kind``: ``not_joined`` (in no collective while others wait
    for it), ``mismatch`` (joined with another op or size), ``no_dump`` (left no readable dump),
    ``p2p`` (its peer's send/recv has no match), ``cycle`` (on a wait cycle)."""

    rank: int
    kind: Literal["not_joined", "mismatch", "no_dump", "p2p", "cycle"]
    reason: str
    group: str | None = None
    seq: int | None = None
    op: str | None = None


class CollectiveReport(BaseModel):
    """What PyTorch Flight Recorder dumps say about a hang (:func:`diag_service.hang.flight.analyze_collectives`)."""

    ranks_dumped: list[int]
    ranks_missing_dump: list[int] = Field(default_factory=list)
    version: str = ""
    stalls: list[CollectiveStall] = Field(default_factory=list)
    p2p: list[P2PStall] = Field(default_factory=list)
    culprits: list[FRCulprit] = Field(default_factory=list)
    waiting: dict[int, str] = Field(
        default_factory=dict, description="Rank -> the incomplete collective it waits in ('group:seq op')."
    )
    warnings: list[str] = Field(default_factory=list)

    @property
    def stalled(self) -> bool:
        """True when the dumps show a hang: a collective some members never joined, or a send/recv never matched."""
        return bool(self.stalls or self.p2p)


class HangReport(BaseModel):
    """Fail-hang localisation by temporal stack invariance (``diag hang``).

    ``stuck_since`` is the first snapshot from which every rank's main-thread stack stayed unchanged;
    ``stuck_since_time`` its unix time when the dumps say.
    """

    hung: bool
    undecided: bool = Field(default=False, description="Too few snapshots to call a hang either way (fewer than the "
                            "unchanged run it takes, and no logs given that show the hang); ``hung`` is then False.")
    snapshots: int
    ranks: int
    stuck_ranks: list[int] = Field(default_factory=list)
    moving_ranks: list[int] = Field(default_factory=list)
    stuck_since: str | None = None
    stuck_since_time: float | None = None
    groups: list[StackGroup] = Field(default_factory=list)
    suspects: list[HangSuspect] = Field(default_factory=list)
    suspect_nodes: list[str] = Field(default_factory=list)
    explanation: str
    warnings: list[str] = Field(default_factory=list)
    log_findings: list[str] = Field(default_factory=list, description=(
        "The findings of the job's logs when they were given (``diag hang --logs``, ``POST /v1/hang``'s ``logs``)."))
    evidence: list[str] = Field(default_factory=list, description="What the report rests on: 'stacks', 'flight_recorder'.")
    collectives: CollectiveReport | None = Field(default=None, description="The Flight Recorder view, when dumps were given.")

    def lone_suspect(self) -> HangSuspect | None:
        """The top suspect when no other suspect's score ties it, else None."""
        if not self.suspects or (len(self.suspects) > 1 and self.suspects[1].score >= self.suspects[0].score):
            return None
        return self.suspects[0]


class CitedItem(BaseModel):
    """One evidence-pack item a narrative cites: its id, where it comes from, and its (redacted) text."""

    id: str = Field(description="E1, E2, ... as cited in the narrative text.")
    label: str = Field(description="Where it comes from: ranks, nodes, file:line, or the analyzer.")
    text: str = Field(description="The item's text, at most 300 characters.")


class Narrative(BaseModel):
    """Two or three sentences for the incident channel, written from the evidence pack only.

    ``citations`` are ids of evidence-pack items (``E1``...); claims without one are dropped.
    ``source`` says whether a language model wrote it or the deterministic fallback did. The model
    never chooses the category or the recovery action; ``suggested_category`` is advisory and only
    offered when the diagnosis is ``unknown``.
    """

    text: str
    citations: list[str] = Field(default_factory=list)
    cited: list[CitedItem] = Field(default_factory=list, description="What each citation id points at, in citation order.")
    source: str = Field(description="'model' or 'fallback'.")
    model: str | None = None
    suggested_category: Category | None = None
    latency_s: float | None = None
    fallback_reason: str | None = Field(default=None, max_length=500, description=(
        "Why the deterministic fallback wrote it (the model disabled or unavailable, its answer rejected by "
        "the checks); None when the model's answer was used."))


#: The job-id alphabet of every interface (API fields and paths, bot commands, uploads, file names):
#: letters, digits and ``._:@/-``, starting with a letter or digit, at most 256 characters (Kubernetes
#: ``namespace/name``, Slurm ``12345.0``, Ray ``raysubmit_...`` all fit).
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,255}$"
_JOB_ID_RE = re.compile(JOB_ID_PATTERN)
_JOB_ID_EXT = re.compile(r"(?i)(\.(?:tar|tgz|gz|zip|bz2|xz|log|txt|out|err|json|jsonl))+$")


def is_job_id(value: str) -> bool:
    """True when ``value`` is in the job-id alphabet (:data:`JOB_ID_PATTERN`) and has no ``..`` segment
    (job ids also name folders under the service's allowed roots)."""
    return bool(_JOB_ID_RE.match(value)) and ".." not in value.split("/")


def job_id_from_name(name: str, default: str = "upload") -> str:
    """A job id from a file or folder name: its base name without archive and log extensions
    (``job-42.tar.gz`` -> ``job-42``), other characters replaced by ``_``; ``default`` if nothing is left."""
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    stem = _JOB_ID_EXT.sub("", base)
    stem = re.sub(r"[^A-Za-z0-9._:@-]+", "_", stem).strip("._:@-")[:256]
    return stem or default


class InputReport(BaseModel):
    """What ingest saw: sizes, layouts, and every problem with the input (never fatal)."""

    path: str
    files: int = 0
    bytes_read: int = 0
    lines: int = 0
    layouts: list[str] = Field(default_factory=list)
    ranks_seen: int = 0
    nodes_seen: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class Diagnosis(BaseModel):
    """The answer for one job: what failed, where first, why, and on what evidence.

    ``first_failing_rank`` and ``faulty_nodes`` are set only when the evidence supports them.
    ``similar_incidents`` is filled by the knowledge base and ``recovery`` by the recovery policy
    when those stages run; both stay empty otherwise. ``timings_ms`` maps stage name to wall
    milliseconds.
    """

    schema_version: str = SCHEMA_VERSION
    job_id: str | None = None
    failure_mode: FailureMode
    category: Category
    responsible: Responsible
    confidence: float = Field(ge=0, le=1)
    root_cause: RootCause
    first_failing_rank: int | None = None
    first_failing_node: str | None = Field(default=None, description=(
        "Node (host) of the first failing rank, as its own evidence line or its straggler report names it; a single "
        "faulty node when no rank's line names one; None when no rank is named."))
    faulty_nodes: list[str] = Field(default_factory=list)
    signature_hits: list[SignatureHit] = Field(default_factory=list)
    events: list[EventTemplate] = Field(default_factory=list)
    similar_incidents: list[SimilarIncident] = Field(default_factory=list)
    novel: bool | None = Field(default=None, description="True when no past incident is similar enough (knowledge base).")
    category_source: str = Field(default="signatures", description="What decided the category: signatures, retrieval, analyzers.")
    narrative: Narrative | None = None
    recovery: RecoveryPlan | None = None
    hang: HangReport | None = Field(default=None, description="Stack-dump analysis when the bundle carries dumps.")
    slow: SlowReport | None = Field(
        default=None,
        description="Fail-slow report (diag_service.slow.SlowReport, without its config) when the bundle carries a timing feed.",
    )
    findings: list[str] = Field(default_factory=list, description="Secondary observations (cascade, etc.).")
    trained: bool | None = Field(default=None, description=(
        "True when some line reports a training step's loss, a step counter advances in one loop's lines, or a "
        "checkpoint of a later step is written (the job trained before it failed), False when none does (it "
        "failed in set-up, or the excerpt holds no such line), None when not known."))
    scheduler_job_id: str | None = Field(default=None, description=(
        "The scheduler's job id as the logs state it (Slurm's slurmstepd/srun lines, a slurm-<id>.out file name); "
        "the recovery commands use it when job_id is not one."))
    k8s_namespace: str | None = Field(default=None, description=(
        "The Kubernetes namespace as the logs state it (kubectl describe's Namespace line, a namespace= field); the "
        "recovery commands use it when the caller gave none, and such a plan is not run by the service."))
    last_checkpoint: CheckpointSeen | None = Field(default=None, description=(
        "The latest checkpoint save of a step the logs show with a time; the recovery options' lost progress "
        "is the work since it when the failure has a time too."))
    restarts: JobRestarts | None = Field(default=None, description=(
        "The job's restarts so far, when its lifecycle is known (a live job); the recovery policy's restart "
        "conditions read them instead of the recovery history's count."))
    input: InputReport
    timings_ms: dict[str, float] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)

    def slow_found(self) -> bool:
        """True when the fail-slow analysis found a slowdown episode or a straggler (a feed with no
        finding, e.g. "not enough steps to judge", is not evidence)."""
        return self.slow is not None and bool(self.slow.job_slowdown or self.slow.stragglers)

    @field_serializer("slow")
    def _slow_without_config(self, v: SlowReport | None) -> dict[str, Any] | None:
        # the detector's settings belong to `diag slow`'s own report, not to every diagnosis
        return None if v is None else v.model_dump(mode="json", exclude={"config"})

    def recurring_findings(self) -> list[str]:
        """The findings of the watchers: a restart storm, a repeat-offender node (:data:`RESTART_STORM`,
        :data:`REPEAT_OFFENDER`), for announcements."""
        return [f for f in self.findings if f.startswith((RESTART_STORM, REPEAT_OFFENDER))]

    def primary_hit(self) -> SignatureHit | None:
        """The root signature that decided the category (hits are sorted by priority), None without one."""
        return next((h for h in self.signature_hits if h.role is EventRole.ROOT and h.category == self.category), None)

    def hang_in_logs(self) -> bool:
        """True when the logs themselves report the hang: the diagnosis is ``fail_hang`` and a signature of mode
        ``fail_hang`` (a collective or store timeout) matched."""
        return self.failure_mode is FailureMode.FAIL_HANG and any(
            h.failure_mode is FailureMode.FAIL_HANG for h in self.signature_hits)

    def has_evidence(self) -> bool:
        """True when the diagnosis rests on something: an event template, a signature hit, evidence lines,
        a hang or slow finding, a faulty node or rank, a category, or a mode other than the default.
        A file with no error, warning or progress line (not a training log, or the wrong attempt) has
        none, and no action should be taken on it (policy condition ``has_evidence``)."""
        return bool(self.events or self.signature_hits or self.root_cause.evidence
                    or (self.hang is not None and self.hang.hung) or self.slow_found() or self.faulty_nodes
                    or self.first_failing_rank is not None or self.category is not Category.UNKNOWN
                    or self.failure_mode is not FailureMode.FAIL_STOP)


# The fail-slow report is part of the shared vocabulary; its models (diag_service.slow.models) use this
# module's enums and Evidence, so they are imported once those exist, and Diagnosis is completed then.
# Either module may be imported first: when diag_service.slow.models is (it imports this module at its
# top), it is still partial here and completes Diagnosis itself at its end.


def _complete_diagnosis(slow_report: type) -> None:
    """Resolve ``Diagnosis.slow``'s type once :class:`diag_service.slow.models.SlowReport` exists."""
    globals()["SlowReport"] = slow_report
    Diagnosis.model_rebuild()


_slow_models = importlib.import_module("diag_service.slow.models")
if hasattr(_slow_models, "SlowReport") and "SlowReport" not in globals():
    _complete_diagnosis(_slow_models.SlowReport)
