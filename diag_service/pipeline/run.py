"""Compose ingest → extract → redact → templates → signatures → localize, timing each stage.

The first four stages are chained generators, so the bundle streams through them block by block;
each stage's time is its own (exclusive) wall time, measured around its ``next()`` calls minus the
time spent upstream.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterator
from functools import lru_cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, InstanceOf

from diag_service import __version__
from diag_service.calibrate import Calibration, load_calibration
from diag_service.contracts import Retriever, Summarizer
from diag_service.domain import (
    Category,
    CheckpointSeen,
    Diagnosis,
    Evidence,
    FailureMode,
    JobRestarts,
    RootCause,
    job_id_from_name,
)
from diag_service.extract import ProgressLog, extract_events
from diag_service.extract.global_ranks import fill_global_ranks
from diag_service.hang.analyzer import analyze_dumps
from diag_service.hang.flight import analyze_fr_files, analyze_fr_members
from diag_service.hang.fusion import fuse
from diag_service.ingest import BundleError, IngestLimits
from diag_service.ingest.open import KEPT_PIPE_BYTES, Bundle, open_bundle
from diag_service.limits import LIMITS
from diag_service.localize import combine_hang, combine_pace, combine_retrieval, combine_slow, localize
from diag_service.localize.attempts import restarts_from_logs
from diag_service.localize.last_lines import combine_last_lines, set_first_failing_node
from diag_service.logformat import iso, parse_timestamp
from diag_service.recovery import History, Policy, load_policy, recommend
from diag_service.recovery.recommend import facts_of
from diag_service.redact import redact_events
from diag_service.signatures import SignatureSet, match_signatures, site_catalog
from diag_service.slow.analyze import analyze_feeds, analyze_slow
from diag_service.slow.feeds import FeedError
from diag_service.slow.logs import log_feed
from diag_service.templates import mine_templates

T = TypeVar("T")
MIXED_JOBS_SPAN_S = 7 * 86400


class DiagnoseRequest(BaseModel):
    """What to diagnose. ``path``: directory, archive or log file. ``signatures_dir``: a site's signature
    folder, added to the built-in catalogue (:func:`~diag_service.signatures.site_catalog`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str
    job_id: str | None = None
    signatures_dir: str | None = None
    limits: IngestLimits | None = None
    recovery: bool = True
    policy_path: str | None = None
    history_path: str | None = None
    #: the job's restarts as its lifecycle events tell them (a live job's, from the service's live registry):
    #: ``Diagnosis.restarts``, read by the recovery policy instead of the history's count
    restarts: JobRestarts | None = None
    #: record this diagnosis' restart and node faults in the history with its plan (False for a live job's
    #: diagnoses: the service records each incident's once, at its final diagnosis)
    record_counts: bool = True
    #: kubernetes | volcano | slurm | ray | torchrun; None: the scheduler the logs show (srun/slurmstepd lines,
    #: kubelet ...), else torchrun (no scheduler seen: the job's own launcher, the plan's steps as comments)
    platform: str | None = None
    kb: bool = False  # similar past incidents from the default knowledge base, when no ``retriever`` is given
    exclude: list[str] = []  # fnmatch patterns on bundle-relative paths or base names, e.g. "truth.json"
    llm: bool = False  # narrative summary by the local model, when no ``summarizer`` is given (never fails)
    #: maps the raw confidence to a measured probability of being right (diag_service.calibrate);
    #: None keeps the raw score (used to fit the map)
    calibration: Calibration | None = Field(default_factory=lambda: _calibration())
    #: an already opened bundle (e.g. :meth:`~diag_service.ingest.open.Bundle.from_text`); ``path`` then
    #: only names it
    bundle: Bundle | None = Field(default=None, exclude=True)
    #: similar past incidents (diag_service.contracts.Retriever); implies retrieval whatever ``kb`` says
    retriever: Retriever | None = Field(default=None, exclude=True)
    #: the narrative (diag_service.contracts.Summarizer); implies a summary whatever ``llm`` says
    summarizer: Summarizer | None = Field(default=None, exclude=True)
    #: the recovery policy (default: ``policy_path``, else the built-in one)
    policy: Policy | None = Field(default=None, exclude=True)
    #: the signature catalogue (default: the layered built-in one plus ``signatures_dir``)
    catalog: InstanceOf[SignatureSet] | None = Field(default=None, exclude=True)


class _Timed:
    """Iterator wrapper accumulating inclusive seconds spent producing items."""

    def __init__(self, it: Iterator[T]) -> None:
        self.it = it
        self.seconds = 0.0

    def __iter__(self) -> _Timed:
        return self

    def __next__(self):  # noqa: ANN204
        t0 = time.perf_counter()
        try:
            return next(self.it)
        finally:
            self.seconds += time.perf_counter() - t0


@lru_cache(maxsize=1)
def _calibration() -> Calibration:
    return load_calibration()


#: Largest bundle (bytes read) whose logs are read a second time for step times when it holds no timing
#: feed: 64 MiB read again costs about 0.5 s on this machine type (the 20 MB bench bundle: ~0.15 s), while a
#: 1 GB bundle would double the diagnosis (`eval/bench/`); above it, `diag slow` reads the logs on request.
STEP_LOG_MAX_BYTES = KEPT_PIPE_BYTES  # 64 MiB, the same bound as what the log pass keeps of a pipe
#: Members (files) read for step lines once this many have given some: the ranks of a synchronous job step
#: together, so the first writers' series is the job's (a 64-rank, 20 MB bundle: 5 s read whole, 0.1 s so).
STEP_LOG_MEMBERS = 2
#: Fewest step records the log series needs before it is judged (the whole-log test's minimum: 2 x 3 blocks + 1).
MIN_STEP_RECORDS = 7


def _slow_from_logs(d: Diagnosis, bundle: Bundle, path: str, sigs: SignatureSet | None = None,
                    cpu_job: bool = False) -> None:
    """Fail-slow from the logs' own step lines (a bundle without a timing feed): the job's step-time series
    (:func:`~diag_service.slow.logs.log_feed`) through :func:`~diag_service.slow.analyze.analyze_slow`;
    a slowdown found is folded in by :func:`~diag_service.localize.combine_slow`."""
    try:
        feed = log_feed(bundle.step_blocks(), path, max_members=STEP_LOG_MEMBERS)
        slow = analyze_slow(feed) if len(feed.batch) >= MIN_STEP_RECORDS else None
    except (BundleError, FeedError, OSError, ValueError) as exc:
        d.input.warnings.append(f"step times of the logs not analysed: {exc}")
        return
    if slow is not None and slow.failure_mode is FailureMode.FAIL_SLOW:
        d.slow = slow
        combine_slow(d, slow, sigs, cpu_job=cpu_job)
    elif 0 < len(feed.batch) < MIN_STEP_RECORDS:  # a few step lines: too few for the change test
        # a log series is sorted by step and carries each step's time (slow.logs.log_feed)
        b = feed.batch
        sec = float(b.step_time[-1])
        combine_pace(d, len(b), int(b.step[-1]), sec if feed.units == "seconds" and math.isfinite(sec) and sec > 0 else None)



def checkpoint_seen(progress: ProgressLog, evidence: list[Evidence], write_failed: bool = False) -> CheckpointSeen | None:
    """The checkpoint a restart resumes from, among the timestamped saves the extractor saw (``progress.saves``): the
    latest one reported done, or reported begun when training went on after it (else the failure may be in it), or
    the one the run itself resumed from when it saved nothing later, at or before the job stopped. The job stopped
    at its earliest evidence line's time, or, when no evidence line has a time of its own, at the latest of their
    borrowed times (lower bounds) and its last progress line.
    ``write_failed`` (the failure is the storage's): a save reported done counts only when training went on after
    it too, as one begun does (a checkpoint is several files, and a disk that filled right after a ``saved`` line
    may have cut the rest of the same checkpoint).
    ``before_failure_s``: from the save to the job's last progress line at or before that (a hang stops making
    progress long before its timeout fires). None without such a save."""
    if not progress.saves:
        return None
    # an evidence line without a time of its own carries its writer's last earlier time, a lower bound that can lie
    # hours before the failure (a traceback after a long quiet stretch): without an exact time the job stopped at the
    # latest of those bounds and its last progress line
    failed = [t for t in (parse_timestamp(e.timestamp, 1970) for e in evidence if e.timestamp and not e.timestamp_approx)
              if t is not None]
    bounds = [t for t in (parse_timestamp(e.timestamp, 1970) for e in evidence if e.timestamp and e.timestamp_approx)
              if t is not None]
    stamps = sorted(t for series in progress.series.values() for t, _ in series)
    latest = bounds + stamps[-1:]
    end = min(failed) if failed else (max(latest) if latest else None)
    # without a failure line that has a time, the logs' last progress line is no bound on the saves: a run's final
    # save comes after its last step line (bounding by that line names the save before the last one)
    limit = end if end is not None and (failed or bounds) else math.inf

    def progress_after(t0: float) -> bool:  # a progress line after t0, at or before the end
        i = bisect.bisect_right(stamps, t0)
        return i < len(stamps) and stamps[i] <= limit

    unsure = ("begun", "saved") if write_failed else ("begun",)
    usable = [s for s in progress.saves if s[0] <= limit and (s[3] not in unsure or progress_after(s[0]))]
    if not usable:
        return None
    ts, step, path, kind, approx = max(usable, key=lambda s: s[0])
    stamp = iso(ts)
    if stamp is None:
        return None
    # the latest save reported done that the storage failure makes unsure (not counted above)
    cut = max((s for s in progress.saves if ts < s[0] <= limit and s[3] == "saved"), key=lambda s: s[0], default=None)
    before = None
    if end is not None:
        i = bisect.bisect_right(stamps, end)  # the last progress line at or before the end, if it is after the save
        last = stamps[i - 1] if i > 0 and stamps[i - 1] >= ts else end
        before = round(max(0.0, last - ts), 3)  # a final save after the last progress line lost nothing
    return CheckpointSeen(timestamp=stamp, step=step, file=path, before_failure_s=before, timestamp_approx=approx,
                          kind="resumed" if kind == "resumed" else "saved",
                          unsure_step=cut[1] if cut is not None else None,
                          unsure_timestamp=iso(cut[0]) if cut is not None else None)


def diagnose(req: DiagnoseRequest) -> Diagnosis:
    """Diagnose one job's log bundle.

    Raises :class:`BundleError` when the path is missing or unreadable, or holds no log lines.
    Returns a :class:`Diagnosis`; problems with parts of the input are in ``diagnosis.input.warnings``.
    """
    t_start = time.perf_counter()
    sigs = req.catalog if req.catalog is not None else site_catalog(req.signatures_dir)
    progress = ProgressLog()
    # One pass over the bundle: log members go to the log stages; stack dumps and timing feeds are
    # captured on the way for the hang and slow analyzers (diag_service.ingest.open).
    bundle = req.bundle if req.bundle is not None else open_bundle(req.path, req.limits, exclude=req.exclude)
    report = bundle.report
    blocks = _Timed(bundle.blocks())
    raw = _Timed(extract_events(blocks, progress, sigs.prefilter_patterns()))
    clean = _Timed(redact_events(raw))
    t0 = time.perf_counter()
    groups = mine_templates(clean)
    fill_global_ranks(groups)
    t_mine_total = time.perf_counter() - t0
    timings = {
        "ingest": blocks.seconds,
        "extract": raw.seconds - blocks.seconds,
        "redact": clean.seconds - raw.seconds,
        "templates": t_mine_total - clean.seconds,
    }
    if report.lines == 0 and bundle.dumps() is None and bundle.flight_recorder() is None and not bundle.fr_archive_dumps():
        raise BundleError(
            f"empty bundle: no readable log lines in {req.path}"
            + (f" ({'; '.join(report.warnings[:5])})" if report.warnings else "")
        )
    t0 = time.perf_counter()
    hits, per_group = match_signatures(groups, sigs)
    timings["signatures"] = time.perf_counter() - t0
    # (a rank that only logged training progress, e.g. ``[time][rank 3][INFO] step 400``, is a rank of the job too)
    ranks_seen = ({r for g in groups for r in g.ranks} | progress.ranks
                  | {k[1] for k in progress.series if k[1] is not None and 0 <= k[1] <= LIMITS.max_rank})
    nodes_seen = {n for g in groups for n in g.nodes}
    t0 = time.perf_counter()
    progress.lines_read, progress.bytes_read = report.lines, report.bytes_read
    loc = localize(groups, hits, per_group, progress, sigs, ranks_seen, nodes_seen)
    timings["localize"] = time.perf_counter() - t0
    report.ranks_seen = len(ranks_seen)
    stamps = [g.first_ts for g in groups if g.first_ts is not None and g.first is not None and not g.first.ts_approx]
    if stamps and max(stamps) - min(stamps) > MIXED_JOBS_SPAN_S:
        report.warnings.append(
            f"events span {(max(stamps) - min(stamps)) / 86400:.0f} days: the bundle may hold logs of several jobs "
            "or attempts; diagnose each job's logs separately"
        )
    report.nodes_seen = sorted(nodes_seen)[:256]
    d = Diagnosis(
        job_id=req.job_id or job_id_from_name(req.path, default="job"),
        failure_mode=loc.failure_mode,
        category=loc.category,
        responsible=loc.responsible,
        confidence=loc.confidence,
        root_cause=RootCause(summary=loc.summary, evidence=loc.evidence),
        first_failing_rank=loc.first_failing_rank,
        faulty_nodes=loc.faulty_nodes,
        signature_hits=hits,
        events=loc.events,
        findings=loc.findings,
        trained=progress.trained,
        last_checkpoint=checkpoint_seen(progress, loc.evidence, write_failed=loc.category is Category.STORAGE),
        scheduler_job_id=progress.scheduler_job_id,
        k8s_namespace=progress.k8s_namespace,
        restarts=req.restarts if req.restarts is not None else restarts_from_logs(progress, bundle.log_members),
        input=report,
        versions={"diag_service": __version__, "signatures": sigs.version},
    )
    dumps = bundle.dumps()
    fr_folder = bundle.flight_recorder()
    archived_fr = bundle.fr_archive_dumps()
    if dumps is not None or fr_folder is not None or archived_fr:
        t0 = time.perf_counter()
        stacks = fr = None
        if fr_folder is not None:
            fr = analyze_fr_files(fr_folder.files, fr_folder.warnings)
        elif archived_fr:
            fr = analyze_fr_members(archived_fr)
        if dumps is not None:
            try:
                # a hang the logs report (collective timeouts) or the Flight Recorder shows (a collective some
                # members never joined) lets even one snapshot per rank place the ranks
                stacks = analyze_dumps(dumps, hung_from_logs=d.hang_in_logs() or (fr is not None and fr.stalled))
            except (OSError, ValueError) as exc:
                report.warnings.append(f"stack dumps not analysed: {exc}")
        if stacks is not None or fr is not None:
            d.hang = fuse(stacks, fr)
            combine_hang(d, d.hang)
        timings["hang"] = time.perf_counter() - t0
        if report.lines == 0 and d.hang is None:
            # no log line and no dump that could be read (an archive cut inside its only dump): nothing to diagnose
            raise BundleError(
                f"empty bundle: no readable log lines and no readable stack or Flight Recorder dump in {req.path}"
                + (f" ({'; '.join(report.warnings[:5])})" if report.warnings else "")
            )
    feeds = bundle.feeds()
    cpu_job = progress.backends == {"gloo"}  # the logs name only gloo: a CPU job (combine_slow)
    if feeds:
        t0 = time.perf_counter()
        try:
            slow = analyze_feeds(feeds)
        except (FeedError, OSError, ValueError) as exc:
            report.warnings.append(f"timing feed not analysed: {exc}")
        else:
            if slow is not None:
                report.warnings.extend(f"timing feed: {w}" for w in slow.input.warnings[:5])
                d.slow = slow
                combine_slow(d, slow, sigs, cpu_job=cpu_job)
        timings["slow"] = time.perf_counter() - t0
    elif (progress.trained or progress.series or progress.job_output) and report.bytes_read <= STEP_LOG_MAX_BYTES:
        t0 = time.perf_counter()
        _slow_from_logs(d, bundle, req.path, sigs, cpu_job=cpu_job)
        timings["slow"] = time.perf_counter() - t0
    combine_last_lines(d, progress)
    set_first_failing_node(d, (loc.first_failing_rank, loc.first_failing_node))
    retriever = req.retriever if req.retriever is not None else _default_retriever() if req.kb else None
    if retriever is not None:
        t0 = time.perf_counter()
        try:
            incidents, novel = retriever.similar_incidents(d, 5)
        except Exception as exc:  # noqa: BLE001 - a missing model or store never fails the diagnosis
            report.warnings.append(f"knowledge base not consulted: {type(exc).__name__}: {exc}")
        else:
            combine_retrieval(d, incidents, novel)
        timings["kb"] = time.perf_counter() - t0
    if req.calibration is not None:
        req.calibration.apply(d)
    # no failure line, hang or slow finding (covers a diagnosis without evidence, and a hang inferred from a
    # training log that just stops)
    # (a run that reported its own completion already says so in its verdict)
    if not (d.events or d.signature_hits or (d.hang is not None and d.hang.hung) or d.slow_found()
            or d.failure_mode is FailureMode.NONE):
        report.warnings.append(
            f"no failure evidence: none of the {report.lines} line(s) is an error, traceback or known failure message "
            "(the warnings every run prints do not count); are these the failed job's logs (every rank, the failed "
            "attempt)?"
        )
    if req.recovery:
        t0 = time.perf_counter()
        pol = req.policy if req.policy is not None else _policy(req.policy_path)
        history = History(req.history_path) if req.history_path else None
        try:
            platform = req.platform or progress.platform() or "torchrun"
            # the watchers' findings: a restart storm of this job, a node behind several jobs' failures
            facts = facts_of(d, pol, history)
            d.findings.extend(facts.findings(d, pol))
            # GPU-seconds for the job's size when the logs state it (NCCL's nranks, the launch command), else the
            # ranks seen
            gpus = progress.world_size or progress.launch_world or len(ranks_seen) or None
            d.recovery = recommend(d, pol, history, platform=platform, gpus=gpus, record_counts=req.record_counts,
                                   facts=facts)
            # who acts is the plan's (its rule may hand over a failure its category gives the platform)
            if d.recovery.responsible is not None and d.recovery.responsible is not d.responsible:
                d.findings.append(f"Responsible: {d.recovery.responsible.value}, by recovery rule {d.recovery.rule_id} "
                                  f"(the {d.category.value} category alone gives {d.responsible.value}).")
                d.responsible = d.recovery.responsible
        finally:
            if history is not None:
                history.close()
        d.versions["recovery_policy"] = pol.version_hash
        timings["recovery"] = time.perf_counter() - t0
    summarizer = req.summarizer if req.summarizer is not None else _default_summarizer() if req.llm else None
    if summarizer is not None:
        t0 = time.perf_counter()
        try:
            res = summarizer.summarize(d)
            d.narrative = res.narrative
            if res.fallback_reason and res.fallback_reason.startswith(("backend unavailable", "configuration")):
                report.warnings.append(f"summary written without the model ({res.fallback_reason})")
        except Exception as exc:  # noqa: BLE001 - a summary problem never fails the diagnosis
            report.warnings.append(f"summary not written: {type(exc).__name__}: {exc}")
        timings["llm"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    d.timings_ms = {k: round(v * 1000, 2) for k, v in timings.items()}
    return d


def _default_retriever() -> Retriever:
    from diag_service.kb import DefaultRetriever  # the [kb] extra: imported only when retrieval is asked for

    return DefaultRetriever()


def _default_summarizer() -> Summarizer:
    from diag_service.llm import LocalSummarizer

    return LocalSummarizer()


@lru_cache(maxsize=4)
def _policy(path: str | None) -> Policy:
    return load_policy(path)
