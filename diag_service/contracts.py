"""The contracts between the stages of a diagnosis: what one stage hands the next, and the optional
parts the caller passes in.

Data between stages (each stage imports these from here, never from another stage):

* :class:`RawEvent` and :class:`ProgressLog`: what ``extract`` finds in the log blocks;
* :class:`TemplateGroup`: the Drain3 groups of ``templates``;
* :class:`Localization`: what ``localize`` decides before the analyzers are folded in.

The optional parts of a diagnosis, as objects the caller passes in (``DiagnoseRequest(retriever=...,
summarizer=...)``), not flags that reach a process-wide default:

* :class:`Retriever`: similar past incidents for a diagnosis (the knowledge base,
  :class:`diag_service.kb.KnowledgeBase` or :class:`diag_service.kb.DefaultRetriever`).
* :class:`Summarizer`: a cited narrative for a diagnosis (:class:`diag_service.llm.LocalSummarizer`),
  returning a :class:`SummaryOutcome`.

Interfaces (CLI, service, bot, labelling) build these once from their settings and pass them with each
request. The pipeline calls them and never raises because of them: a failure becomes a warning.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from diag_service.domain import (
    Category,
    Diagnosis,
    EventKind,
    EventTemplate,
    Evidence,
    FailureMode,
    Narrative,
    Responsible,
    SimilarIncident,
)

#: Distinct example events kept per template group.
_EXAMPLES = 8
#: Ranks whose first occurrence a template group keeps (:attr:`TemplateGroup.rank_first`).
_RANK_EXAMPLES = 64


@dataclass(slots=True)
class RawEvent:
    """One candidate event before deduplication. Times are unix seconds; ``line`` is 1-based."""

    kind: EventKind
    key: str
    lines: list[str]
    path: str
    line: int
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    ts: float | None = None
    ts_approx: bool = False
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class CollectiveTimeout:
    """One rank's report of a collective that timed out (PyTorch ProcessGroupNCCL watchdog)."""

    rank: int | None
    node: str | None
    seq: int
    op: str
    numel: int | None
    ts: float | None


@dataclass(slots=True)
class ProgressLog:
    """Observations gathered while extracting, beside the events.

    ``series``: training-progress lines per stream, ``(unix seconds, step)``, the last 4,096 each.
    ``file_last_step``: per file (bundle path, first 4,096), the step of its last progress line read, with or
    without a time (how far an attempt of a restarted job got: ``diag_service.localize.attempts``).
    ``rank_last_step``: per global rank, the step of its last progress line read, with or without a time (first
    4,096 ranks); ``steps_sampled``: some block had more progress lines than were read (about 64 per block), so a
    rank's last step there may be an earlier one.
    ``stack_dumps``: number of stack-dump headers seen (py-spy ``Thread N (idle)``).
    ``collectives``: every collective-timeout report (first 100,000).
    ``last_completed``: per rank, the watchdog's "last completed NCCL work" sequence number.
    ``ranks``: every global rank seen anywhere (line prefixes, file names), not only in events.
    ``source_node_files``: per file (first 4,096), the node of ``source_nodes`` its name or folder gives.
    ``source_nodes``: the nodes that files are attributed to by their names or folders (``console_node0.log``,
    ``node1/``), whether or not they hold an event (first 4,096).
    ``launcher_local_ranks``: per file of torchrun's ``--log-dir`` tree (``<run_id>/attempt_N/<local_rank>/...``,
    ingest's ``torchrun_logdir`` layout), the local rank its folder names: the launcher's own attribution of every
    line in it (first 4,096 files).
    ``world_size``: from NCCL's ``comm ... rank R nranks N`` init lines, when present.
    ``launch_world``: the number of processes a launch command shown in the logs asks for (torchrun's
    ``--nproc-per-node`` x ``--nnodes``, accelerate's ``--num_processes``; ``diag_service.extract.events.launch_world``).
    ``stated_world``: the world size the job's own output states in the first 64 KiB of a file (``world_size=4``,
    ``world size: 4``, ``WORLD_SIZE=4``; ``diag_service.extract.events.STATED_WORLD``; else a banner's ``rank 2/4``, every one
    in that head agreeing: ``RANK_OF_WORLD``), the first seen.
    ``job_output``: some line looks like a distributed training job's own output (NCCL INFO lines, rank or
    world-size banners, progress bars and loss lines, a launcher or framework name): see
    ``diag_service.extract.events.JOB_OUTPUT``.
    ``trained``: some line reports a training step's loss (``diag_service.extract.events.TRAINING_LINE``), one
    loop's step lines show an advancing counter, or a checkpoint of a later step is saved (``STEP_SAVED``).
    ``completed``: per file, the run's report of its own completion (``diag_service.extract.events.COMPLETION``)
    found near the end of the file's last block read so far (``{path: line}``, first 4,096 files); ``completed_line``
    the same mark's 1-based line number in its file (``{path: n}``), so a failure written after it is told apart.
    ``benchmarks``: per file, the summary line of an nccl-tests run that reached its end (``# Avg bus bandwidth :
    X``, GB/s; ``diag_service.extract.events.benchmark_line``), found as ``completed`` is.
    ``platforms``: blocks per scheduler whose marks they carry (``diag_service.extract.events.PLATFORM_MARKS``).
    ``backends``: the collective backends the job's output names (``gloo``, ``nccl``, ...; ``diag_service.extract.events
    .BACKEND``), looked for in each block's head and tail.
    ``launcher_started``: the number of files that show a launcher's start banner (torchrun's OMP_NUM_THREADS notice).
    ``lines_read``, ``bytes_read``: the input read (set by the pipeline from ingest's report; 0 when not known).
    ``launches``: unix times of a launcher's (re)start lines (``diag_service.extract.events.LAUNCH_MARKS``: torchrun's
    start banner, torchelastic's "will restart worker group"), first 1,024.
    ``saves``: checkpoint saves of a training step and resumptions from one with a time on their line or a few lines
    above (``STEP_SAVED``, ``RESUMED_FROM``), the last few of each block: ``(unix seconds, step or None, file path,
    kind, approx)``, ``kind`` ``saved``, ``begun`` (``Saving``, ``writing``: it may not have completed) or
    ``resumed``; ``approx``: the line had no time of its own (the time is an earlier line's, a lower bound); the latest
    256 by time are kept.
    ``last_lines``: per global rank (first 4,096), its last few lines that are not failure candidates (the pre-filter's
    lines are events already), read from the last :data:`~diag_service.extract.events.LAST_LINES_BYTES` of each block:
    ``[(file path, line number, unix seconds or None, text without prefixes)]``, oldest first, at most
    :data:`~diag_service.extract.events.LAST_LINES` (what a rank that went quiet was doing: "saving checkpoint",
    "waiting for ..."). A rank whose lines all end earlier than a block's tail window keeps an earlier block's.
    ``scheduler_job_id``: the Slurm job id the logs state (``diag_service.extract.events.SLURM_JOB_ID``), the first seen.
    ``k8s_namespace``: the Kubernetes namespace the logs state (``diag_service.extract.events.K8S_NAMESPACE``), the
    first seen.
    ``file_start``: per file (first 4,096), the first time among its first lines (unix seconds): when that console or
    log began (an attempt started after another ended begins after it).
    """

    series: dict[tuple[str, int | None, str | None], deque[tuple[float, int]]] = field(default_factory=dict)
    rank_last_step: dict[int, int] = field(default_factory=dict)
    file_last_step: dict[str, int] = field(default_factory=dict)
    steps_sampled: bool = False
    stack_dumps: int = 0
    collectives: list[CollectiveTimeout] = field(default_factory=list)
    last_completed: dict[int, int] = field(default_factory=dict)
    ranks: set[int] = field(default_factory=set)
    source_nodes: set[str] = field(default_factory=set)
    source_node_files: dict[str, str] = field(default_factory=dict)
    launcher_local_ranks: dict[str, int] = field(default_factory=dict)
    world_size: int | None = None
    launch_world: int | None = None
    stated_world: int | None = None
    job_output: bool = False
    completed: dict[str, str] = field(default_factory=dict)
    completed_line: dict[str, int] = field(default_factory=dict)
    benchmarks: dict[str, str] = field(default_factory=dict)
    trained: bool = False
    platforms: Counter[str] = field(default_factory=Counter)
    backends: set[str] = field(default_factory=set)
    launcher_started: int = 0
    lines_read: int = 0
    bytes_read: int = 0
    launches: list[float] = field(default_factory=list)
    saves: list[tuple[float, int | None, str, str, bool]] = field(default_factory=list)
    last_lines: dict[int, list[tuple[str, int, float | None, str]]] = field(default_factory=dict)
    scheduler_job_id: str | None = None
    k8s_namespace: str | None = None
    file_start: dict[str, float] = field(default_factory=dict)

    def platform(self) -> str | None:
        """The scheduler the logs' marks point to (``PLATFORM_MARKS`` of the extractor: blocks with a mark),
        None when there is none or a tie."""
        top = self.platforms.most_common(2)
        if not top or (len(top) == 2 and top[0][1] == top[1][1]):
            return None
        return top[0][0]

    def add(self, key: tuple[str, int | None, str | None], ts: float, step: int) -> None:
        d = self.series.get(key)
        if d is None:
            d = self.series[key] = deque(maxlen=4096)
        d.append((ts, step))


@dataclass(slots=True)
class TemplateGroup:
    """All occurrences of one template. ``first`` is the earliest event (by time, then bundle order).

    ``examples``: up to 8 events with distinct keys; ``rank_first``: each rank's first event, for the first
    64 ranks met (the same message on several ranks keeps each rank's own traceback frames); ``paths``: the first 64
    files it occurred in."""

    template_id: int
    template: str
    kind: EventKind
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    first: RawEvent | None = None
    first_order: int = 0
    examples: list[RawEvent] = field(default_factory=list)
    _example_keys: set[str] = field(default_factory=set)
    rank_first_ts: dict[int, float] = field(default_factory=dict)
    rank_first: dict[int, RawEvent] = field(default_factory=dict)
    #: the files it occurred in (the first :data:`_RANK_EXAMPLES`): where a message was seen, beyond its examples
    paths: set[str] = field(default_factory=set)

    def add(self, ev: RawEvent, order: int) -> None:
        self.count += 1
        if len(self.paths) < _RANK_EXAMPLES:
            self.paths.add(ev.path)
        if ev.rank is not None:
            self.ranks.add(ev.rank)
            if ev.rank not in self.rank_first and len(self.rank_first) < _RANK_EXAMPLES:
                self.rank_first[ev.rank] = ev
            if ev.ts is not None and (ev.rank not in self.rank_first_ts or ev.ts < self.rank_first_ts[ev.rank]):
                self.rank_first_ts[ev.rank] = ev.ts
        if ev.node is not None:
            self.nodes.add(ev.node)
        if self.first is None or _earlier(ev, order, self.first, self.first_order):
            self.first, self.first_order = ev, order
        if len(self.examples) < _EXAMPLES and ev.key not in self._example_keys:
            self._example_keys.add(ev.key)
            self.examples.append(ev)

    @property
    def first_ts(self) -> float | None:
        return self.first.ts if self.first else None


def _earlier(a: RawEvent, ao: int, b: RawEvent, bo: int) -> bool:
    if a.ts is not None and b.ts is not None:
        return (a.ts, ao) < (b.ts, bo)
    if a.ts is not None and not a.ts_approx and b.ts is None:
        return True
    if b.ts is not None and not b.ts_approx and a.ts is None:
        return False
    return ao < bo


@dataclass
class Localization:
    failure_mode: FailureMode
    category: Category
    responsible: Responsible
    confidence: float
    summary: str
    evidence: list[Evidence]
    first_failing_rank: int | None
    faulty_nodes: list[str]
    events: list[EventTemplate]
    findings: list[str] = field(default_factory=list)
    #: The node the first failing rank ran on when no evidence line of its own says it (a hang's silent rank, placed
    #: by its progress lines' file or prefix); None otherwise.
    first_failing_node: str | None = None




@runtime_checkable
class Retriever(Protocol):
    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        """The ``k`` most similar stored incidents, best first, and whether ``diagnosis`` looks novel.
        May raise any :class:`~diag_service.errors.DiagError` (the pipeline reports it as a warning)."""
        ...


class SummaryOutcome(Protocol):
    """What a summarizer did: the ``narrative``, and why it fell back to the deterministic summary
    (``fallback_reason``, None when the model wrote it)."""

    narrative: Narrative
    fallback_reason: str | None


@runtime_checkable
class Summarizer(Protocol):
    def summarize(self, diagnosis: Diagnosis) -> SummaryOutcome:
        """A narrative of ``diagnosis`` (never raises for a model problem: it falls back)."""
        ...


__all__ = [
    "CollectiveTimeout",
    "Localization",
    "ProgressLog",
    "RawEvent",
    "Retriever",
    "Summarizer",
    "SummaryOutcome",
    "TemplateGroup",
]
