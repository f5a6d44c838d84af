"""``analyze_slow``: the one batch entry point of fail-slow detection, and the feed dispatcher.

``analyze_slow`` loads any supported input and replays it, in step order, through
:class:`~diag_service.slow.detector.SlowDetector` (the streaming detector), so that a feed analysed at
once and the same feed streamed step by step give the same report.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np

from diag_service.domain import Category, FailureMode
from diag_service.fsutil import open_regular
from diag_service.ingest import BundleError
from diag_service.ingest.members import FEED_MEMBER, FeedMember, feed_preference
from diag_service.slow.detector import (
    HIDDEN_LATE_RANK_HINT,
    HIDDEN_STRAGGLER_HINT,
    SlowDetector,
    explain_episodes,
    log_evidence_list,
)
from diag_service.slow.feeds import (
    Feed,
    FeedError,
    StepBatch,
    csv_feed,
    dropped_nodes_warning,
    is_json_array,
    jsonl_feed,
    load_json_array,
    load_jsonl,
    load_table,
    merge_rank_feeds,
)
from diag_service.slow.logs import RANK_PHASE_MIN_STEPS, load_log_bundle
from diag_service.slow.material import MATERIAL_SLOWDOWN_S, immaterial
from diag_service.slow.models import GroupFinding, SlowConfig, SlowEpisode, SlowReport, Straggler, StragglerKind
from diag_service.slow.offline import find_shift, whole_log_episode
from diag_service.slow.traces import is_alibaba_trace, is_bytedance_trace, load_alibaba_feed, load_bytedance_feed

_JSONL = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")


def load_feed(path: str | Path, root: str | Path | None = None) -> Feed:
    """Load a timing feed or a log bundle, choosing the reader from the path.

    * ``*.jsonl``/``*.ndjson`` (optionally ``.gz``): the lab's per-rank records; ``*.json`` holding one
      array of such records;
    * ``*.csv``/``*.parquet``: the same columns, or the public traces (PAI CSV, ByteDance parquet),
      recognised by their columns;
    * a directory holding a timing feed at its top (:data:`~diag_service.ingest.members.FEED_MEMBER`; a lab
      run's ``timing.jsonl``): that feed;
    * anything else (a directory, archive or log file): iteration lines of the logs.

    A feed file is opened once, checked as it is opened (:func:`~diag_service.fsutil.open_regular`): a
    regular file only (a device such as ``/dev/zero`` or a pipe is refused), and, when it was found in a
    folder (or ``root``, the bundle folder it belongs to, is given), still under that folder (a link
    leaving it is refused). Raises :class:`~diag_service.slow.feeds.FeedError` if the path does not exist,
    is refused, or cannot be read.
    """
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise FeedError(f"no such file or directory: {p}")
    if p.is_dir():
        found = sorted((f for f in p.iterdir() if f.is_file() and FEED_MEMBER.search(f.name)),
                       key=lambda f: feed_preference(f.name))
        if found:
            return _per_rank_feeds(found, lambda f: load_feed(f, root=p)) or load_feed(found[0], root=p)
    name = p.name.lower()
    if not name.endswith((*_JSONL, ".parquet", ".json", ".csv")):
        try:
            return load_log_bundle(p)
        except BundleError as exc:
            raise FeedError(str(exc)) from exc
    try:
        fh = open_regular(p, root) if root is not None else open_regular(p.resolve())
    except OSError as exc:
        raise FeedError(f"cannot read {p}: {exc}") from exc
    with fh:
        return _load_feed_file(p, name, fh)


def _load_feed_file(p: Path, name: str, fh: BinaryIO) -> Feed:
    if name.endswith(_JSONL):
        feed = load_jsonl(p, fh)
        b = feed.batch
        if len(b) and not (np.isfinite(b.step_time).any() or np.isfinite(b.end - b.start).any()) \
                and not name.endswith(".gz"):
            # JSON records with no step time the feed format knows (start/end, step_time_s): a script's own step
            # lines printed as JSON ({"rank": 1, "step": 50, "step_ms": 91.8}), which the log reader understands
            # (trial 40 r11: "only 140 step record(s): not enough to learn a baseline" for 140 timed steps)
            try:
                logs = load_log_bundle(p)
            except BundleError:
                return feed
            if len(logs.batch):
                logs.stats.warnings.insert(0, "the records carry no step time of the feed format (start/end, "
                                              "step_time_s): read as a script's step lines")
                return logs
        return feed
    if name.endswith(".parquet"):
        import polars as pl

        try:
            cols = pl.read_parquet_schema(fh)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise FeedError(f"cannot read {p}: {exc}") from exc
        return load_bytedance_feed(p, fh) if is_bytedance_trace(list(cols)) else load_table(p, fh)
    if name.endswith(".json") and is_json_array(p, fh):
        return load_json_array(p, fh)
    if name.endswith(".csv"):
        header = [c.strip().strip('"') for c in fh.readline(1 << 16).decode("utf-8", errors="replace").split(",")]
        return load_alibaba_feed(p, fh) if is_alibaba_trace(header) else load_table(p, fh)
    try:
        return load_log_bundle(p)
    except BundleError as exc:
        raise FeedError(str(exc)) from exc


def _sorted_steps(b: StepBatch) -> list[StepBatch]:
    """Split a batch into per-step batches in step order (records within a step keep their order)."""
    if len(b) == 0:
        return []
    order = np.argsort(b.step, kind="stable")
    ss = b.step[order]
    cut = np.flatnonzero(np.diff(ss)) + 1
    return [b.take(order[lo:hi]) for lo, hi in zip(np.concatenate([[0], cut]), np.concatenate([cut, [ss.size]]), strict=True)]


def analyze_slow(
    source: str | Path | Feed | StepBatch | Iterable[Mapping[str, Any]],
    config: SlowConfig | None = None,
    *,
    world_size: int | None = None,
) -> SlowReport:
    """Is the job slower than it should be, since when, by how much, and which rank, node or stage is to blame?

    ``source``: a path (timing feed, public trace or log bundle; see :func:`load_feed`), a loaded
    :class:`~diag_service.slow.feeds.Feed`, a :class:`~diag_service.slow.feeds.StepBatch`, or an iterable
    of records in the lab's format (``{"rank", "node", "step", "start", "end", "compute_s", "comm_s",
    "data_s"}``, unix seconds / seconds). ``config``: detector parameters (defaults documented on
    :class:`~diag_service.slow.models.SlowConfig`); ``world_size``: number of ranks, if known.

    Returns a :class:`~diag_service.slow.models.SlowReport` (``failure_mode`` is ``fail_slow`` when an
    episode, straggler or group was found). Bad records are skipped and reported in ``report.input``;
    raises :class:`~diag_service.slow.feeds.FeedError` only when a path cannot be read at all or holds no
    usable step record.
    """
    t0 = time.perf_counter()
    if isinstance(source, str | Path):
        feed = load_feed(source)
        if len(feed.batch) == 0:  # a file or bundle with nothing usable (a stream may start empty; a file may not)
            why = "; ".join(feed.stats.warnings[:3]) or "no step records"
            raise FeedError(f"no step timing in {source} ({why}): nothing to analyse")
    elif isinstance(source, Feed):
        feed = source
    elif isinstance(source, StepBatch):
        feed = Feed(source, _empty_stats("batch", source))
    else:
        from diag_service.slow.feeds import RecordConverter

        conv = RecordConverter()
        batch = conv.convert(source)
        feed = Feed(batch, _empty_stats("records", batch))
        feed.stats.bad_records = conv.bad
        if conv.bad:
            feed.stats.warnings.append(f"{conv.bad} record(s) were invalid and skipped, e.g. " + "; ".join(conv.reasons[:3]))
        if conv.dropped_nodes:
            feed.stats.warnings.append(dropped_nodes_warning(conv.dropped_nodes))
    t_load = time.perf_counter()
    det = SlowDetector(config, world_size=world_size, source=feed.stats.source, fmt=feed.stats.format, units=feed.units)
    det.stats.bad_records = feed.stats.bad_records
    det.stats.warnings = list(feed.stats.warnings)
    batch = feed.batch
    if batch.node_names:
        batch = det._own_nodes(batch)
    # every rank known up front, so that a step is processed as soon as it is complete, as in a live feed
    det._register_ranks(batch.rank)
    for part in _sorted_steps(batch):
        det.update(part)
    rep = det.report()
    if not feed.stats.format.startswith("logs") and len(batch):
        _untimed_straggler(rep, batch)
    if feed.stats.format.startswith("logs") and len(batch):
        if feed.pause_durations:
            _frequent_passes(rep, batch, feed.pause_durations)
        _untimed_log_time(rep, batch)
        _drop_averaged_out(rep, det)
        _whole_log(rep, batch)
        _end_recovered_tail(rep, batch, det)
        if feed.rank_batch is not None and not rep.stragglers:
            _log_stragglers(rep, det, feed.rank_batch, config)
        if feed.save_steps and not rep.stragglers:
            _checkpoint_slowdown(rep, batch, feed.save_steps)
        if feed.save_durations and not rep.stragglers and rep.category is not Category.STORAGE:
            _stated_save_slowdown(rep, batch, feed.save_durations)
        if feed.pause_durations and not rep.stragglers and rep.category is not Category.STORAGE:
            _stated_pause_slowdown(rep, batch, feed.pause_durations)
        if feed.log_evidence:
            _log_flood(rep, feed.log_evidence)
        if feed.notes:
            _onset_note(rep, batch, feed.notes)
    rep.input.records = len(batch)
    rep.input.bad_records = feed.stats.bad_records
    rep.input.ranks = max(rep.input.ranks, feed.stats.ranks)
    rep.input.nodes = max(rep.input.nodes, feed.stats.nodes)
    rep.minor = immaterial(rep, finished=False)
    if feed.log_evidence:
        steps = {e.start_step for e in rep.job_slowdown} | {e.detected_at_step for e in rep.job_slowdown}
        chosen = {s: feed.log_evidence[s] for s in steps if s in feed.log_evidence}
        first = min(feed.log_evidence)
        chosen.setdefault(first, feed.log_evidence[first])
        rep.log_evidence = log_evidence_list(chosen)
        # a straggler named from every rank's lines: its own lines where its wait stood out, first
        for s in rep.stragglers[:3]:
            own = sorted(k[1] for k in feed.rank_evidence if k[0] == s.rank and k[1] >= s.first_step)[:2]
            rep.log_evidence = [feed.rank_evidence[(s.rank, k)] for k in own] + rep.log_evidence
    rep.timings_ms = {"load": round((t_load - t0) * 1000, 3), **rep.timings_ms,
                      "total": round((time.perf_counter() - t0) * 1000, 3)}
    return rep


#: :func:`_untimed_straggler`: the one rank's rise of untimed time (its step time minus its timed phases) must be at least
#: this share of the job's excess step time in the episode, ...
UNTIMED_SHARE = 0.5
#: ... every other rank's rise at most this share of that rank's, ...
UNTIMED_OTHERS = 0.2
#: ... over at least this many of the rank's records in the episode and five in the baseline window.
UNTIMED_MIN_STEPS = 10
UNTIMED_FINDING = (
    "Rank {rank}'s step time rose by {rise:.3g}{u} from step {step} while its timed phases did not (the other ranks' "
    "compute rose instead: they wait for it inside backward's all-reduce): it spends that time on work outside the "
    "timed phases (logging or metrics on that rank, a monitor, an inline save or evaluation), the job's own code on "
    "that rank. ")


def _untimed_straggler(rep: SlowReport, batch: StepBatch) -> None:
    """Name the rank whose work outside the feed's timed phases makes a job-wide slowdown (in place).

    A feed that times ``compute`` around ``backward()`` shows one rank's slowness as every rank's compute rising alike
    (:data:`~diag_service.slow.detector.HIDDEN_STRAGGLER_HINT`): the others wait inside the gradient all-reduce. When
    the extra time is outside the timed phases on one rank, the records still say who: that rank's untimed time (step
    time minus data, compute and communication) rose by at least :data:`UNTIMED_SHARE` of the job's excess step time
    in the costliest episode, and no other rank's rose by more than :data:`UNTIMED_OTHERS` of it. The rank is then a
    straggler (kind compute: its own work), the category the job's code, and the hint is dropped. Medians over the
    baseline window and the episode's records (at least :data:`UNTIMED_MIN_STEPS`); O(records)."""
    w = rep.input.warnings
    if rep.stragglers or rep.groups or not rep.job_slowdown or rep.baseline.step_time_s is None or not (
            HIDDEN_STRAGGLER_HINT in w or HIDDEN_LATE_RANK_HINT in w):
        return
    b0, b1 = rep.baseline.first_step, rep.baseline.last_step
    if b0 is None or b1 is None:
        return
    ep = max(rep.job_slowdown, key=lambda e: e.time_lost_s)
    end = ep.end_step if ep.end_step is not None else int(batch.step.max())
    T = np.where(np.isfinite(batch.step_time), batch.step_time, batch.end - batch.start)
    phases = np.vstack([batch.compute, batch.comm, batch.data])
    known = np.isfinite(phases).any(axis=0) & np.isfinite(T) & (batch.kind == 0) & (batch.rank >= 0)
    untimed = T - np.nansum(phases, axis=0)
    in_base = known & (batch.step >= b0) & (batch.step <= b1)
    in_ep = known & (batch.step >= ep.start_step) & (batch.step <= end)
    ranks = np.unique(batch.rank[in_ep])
    if ranks.size < 2:
        return
    rise: dict[int, float] = {}
    for r in ranks:
        mb, me = in_base & (batch.rank == r), in_ep & (batch.rank == r)
        if mb.sum() < 5 or me.sum() < UNTIMED_MIN_STEPS:
            return
        rise[int(r)] = float(np.median(untimed[me]) - np.median(untimed[mb]))
    excess = float(np.median(T[in_ep])) - rep.baseline.step_time_s
    top = max(rise, key=lambda r: rise[r])
    others = [v for r, v in rise.items() if r != top]
    if excess <= 0 or rise[top] < UNTIMED_SHARE * excess or max(others) > UNTIMED_OTHERS * rise[top]:
        return
    mine = in_ep & (batch.rank == top)
    base_u = float(np.median(untimed[in_base & (batch.rank == top)]))
    order = np.argsort(batch.step[mine], kind="stable")
    steps, extra = batch.step[mine][order], (untimed[mine] - base_u)[order]
    # its own onset: the first record from which the median of the next UNTIMED_MIN_STEPS is half its rise (the
    # episode may have opened earlier on the job's own noise)
    onset = next((int(steps[i]) for i in range(extra.size - UNTIMED_MIN_STEPS + 1)
                  if np.median(extra[i:i + UNTIMED_MIN_STEPS]) >= 0.5 * rise[top]), ep.start_step)
    extra = extra[steps >= onset]
    node_codes = batch.node[mine]
    node = batch.node_names[int(node_codes[0])] if node_codes.size and 0 <= int(node_codes[0]) < len(batch.node_names) \
        else None
    u = "s" if rep.units == "seconds" else ""
    rep.stragglers = [Straggler(
        rank=top, node=node, kind=StragglerKind.COMPUTE,
        slowdown_factor=round((rep.baseline.step_time_s + rise[top]) / rep.baseline.step_time_s, 3),
        first_step=onset, last_step=end, detected_at_step=max(ep.detected_at_step, onset), confidence=0.7,
        intermittent=bool(np.mean(extra >= 0.5 * rise[top]) < 0.7),
        slow_fraction=round(float(np.mean(extra >= 0.5 * rise[top])), 3),
        time_lost_s=round(float(np.clip(extra, 0, None).sum()), 6), active=ep.ongoing)]
    ep.explained_by_ranks = [top]
    rep.category = Category.USER_CODE
    rep.summary = UNTIMED_FINDING.format(rank=top, rise=rise[top], u=u, step=onset) + rep.summary
    rep.input.warnings = [x for x in w if x not in (HIDDEN_STRAGGLER_HINT, HIDDEN_LATE_RANK_HINT)]


#: :func:`_untimed_log_time`: the share of a log's wall time between its step lines that its steps' own stated times
#: do not cover, from which the job's time outside its steps is the slowdown (an evaluation or checkpoint pause of a
#: short run can take half of it: zoo dev's clean control with evaluation pauses, 58 %), ...
UNTIMED_LOG_SHARE = 0.8
#: ... over at least this many intervals between step lines, with at least this many pauses (intervals mostly outside
#: the steps) recurring at one period and holding at least this share of that time.
UNTIMED_LOG_MIN_INTERVALS = 10
UNTIMED_LOG_MIN_PAUSES = 3
UNTIMED_LOG_PAUSED = 0.8
UNTIMED_LOG_FINDING = (
    "The job spent {share:.0%} of its time outside its logged steps ({untimed:.3g} s of {wall:.3g} s between its step "
    "lines; the steps themselves kept their stated pace): {n} pause(s) of about {pause:.2g} s{period}, e.g. before step "
    "{step}. Time between steps is the job's own set-up: DataLoader workers started anew each epoch "
    "(persistent_workers=False), a checkpoint or evaluation much too often, or other work between steps. ")


def _untimed_log_time(rep: SlowReport, batch: StepBatch) -> None:
    """A log whose step lines state each step's own time (``step_ms``) and carry a time of their own: when the time
    between consecutive lines exceeds the steps' stated times by :data:`UNTIMED_LOG_SHARE` of the log's span or more
    (and by at least a second in all), mostly in pauses recurring at one period (at least :data:`UNTIMED_LOG_MIN_PAUSES`
    holding :data:`UNTIMED_LOG_PAUSED` of it), the job spent that time outside its steps (workers restarted each
    epoch, a save too often): an episode of the whole span with that cost, category config, its pauses and their period said
    (in place; a report that found a costlier slowdown is left alone). O(records)."""
    ok = (np.isfinite(batch.end) & np.isfinite(batch.step_time) & (batch.kind == 0) & (batch.rank < 0))
    if ok.sum() < UNTIMED_LOG_MIN_INTERVALS + 1:
        return
    order = np.argsort(batch.step[ok], kind="stable")
    step, end = batch.step[ok][order], batch.end[ok][order]
    stated = (batch.weight[ok] * batch.step_time[ok])[order][1:]
    wall = np.diff(end)
    if (wall < 0).any() or wall.sum() <= 0:
        return
    extra = np.clip(wall - stated, 0.0, None)
    untimed, span = float(extra.sum()), float(wall.sum())
    if untimed < UNTIMED_LOG_SHARE * span or untimed < MATERIAL_SLOWDOWN_S or untimed <= rep.time_lost_s:
        return
    pauses = np.flatnonzero(extra > 0.5 * wall)
    # pauses that recur at one period and hold most of that time (an overhead spread over every interval, such as a
    # profiler's sampling or the host's contention, is not a pause between steps)
    if pauses.size < UNTIMED_LOG_MIN_PAUSES or extra[pauses].sum() < UNTIMED_LOG_PAUSED * untimed:
        return
    # ... a minority of the intervals, between which the stated times do cover the lines' times (else the stated time
    # is not the step's whole time: a per-step figure printed every N steps, a phase only)
    rest = np.ones(wall.size, bool)
    rest[pauses] = False
    if pauses.size > rest.sum() or extra[rest].sum() > 0.5 * wall[rest].sum():
        return
    at = step[1:][pauses]
    gaps = np.diff(at)
    if not np.all(gaps == np.median(gaps)):
        return
    period = f", every {int(np.median(gaps))} steps"
    ep = SlowEpisode(start_step=int(at[0]), end_step=int(step[-1]), detected_at_step=int(at[0]),
                     steps=int(step[-1] - step[0]), slowdown_factor=round(span / max(span - untimed, 1e-9), 3),
                     time_lost_s=round(untimed, 6))
    rep.job_slowdown = [ep, *rep.job_slowdown]
    rep.time_lost_s = round(sum(e.time_lost_s for e in rep.job_slowdown), 6)
    rep.failure_mode = FailureMode.FAIL_SLOW
    rep.category = Category.CONFIG
    rep.summary = UNTIMED_LOG_FINDING.format(share=untimed / span, untimed=untimed, wall=span, n=int(pauses.size),
                                             pause=float(np.median(extra[pauses])), period=period, step=int(at[0])) \
        + rep.summary


def _drop_averaged_out(rep: SlowReport, det: SlowDetector) -> None:
    """A log is read after the fact: a job episode whose mean step time over its whole span is not above the
    baseline (an alarm at 1.16x that the rest of the log averaged back to 0.99x) was no slowdown, and is dropped;
    the verdict, category and summary are the rest's. The alarm stays in ``rep.alarms``."""
    kept = [e for e in rep.job_slowdown if e.slowdown_factor > 1.0]
    if len(kept) == len(rep.job_slowdown):
        return
    rep.job_slowdown = kept
    found = bool(kept or rep.stragglers or rep.groups)
    rep.failure_mode = FailureMode.FAIL_SLOW if found else None
    rep.category = SlowDetector._category(kept, rep.stragglers, rep.groups)
    rep.summary = det._summary(kept, rep.stragglers, rep.groups)
    rep.time_lost_s = round(sum(e.time_lost_s for e in kept), 6)


#: A line that announces new values of the job's own settings: a value changed with an arrow ("context 64 -> 2048"),
#: a new stage/phase/curriculum step with values ("stage 2: {...}", "curriculum: ..."), or "set/changed/switching ...
#: to" a value.
SETTING_CHANGE = re.compile(
    r"\S\s*(?:->|→|=>)\s*\S"
    r"|(?i:\b(?:stage|phase|curriculum)\b\s*\d*\s*:\s*\S)"
    r"|(?i:\b(?:set|changed?|switch(?:ed|ing)?|increas(?:ed?|ing)|rais(?:ed?|ing))\b[^.;]{0,60}\bto\s+\d)")
#: How many readings before a slowdown's first slow step a log's note line may stand and still be told as said at its
#: onset (:func:`_onset_note`).
ONSET_READINGS = 2
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def _onset_note(rep: SlowReport, batch: StepBatch, notes: tuple[tuple[int, str], ...]) -> None:
    """A log read after the fact: the line(s) the job printed, between its steps, within :data:`ONSET_READINGS`
    readings before the first slowdown's first slow step, and of a kind it had not printed before (its words with the
    numbers masked), are told in the summary: what the job said as it slowed ("augmentation: enabling jitter+mixup",
    "online-metrics thread started": the job's own changes, not the platform's). A
    finding, not a cause: the category stands, unless a line told announces new values of the job's own settings
    (:data:`SETTING_CHANGE`: "curriculum: context 64 -> 2048", "stage 2: {'lr': 0.0003, 'eval_every': 1}") and no
    rank is singled out: a job-wide slowdown that starts as the job switches its own settings is that switch
    (config), not the platform."""
    start = min([e.start_step for e in rep.job_slowdown] + [s.first_step for s in rep.stragglers], default=None)
    if start is None:
        return
    steps = np.unique(batch.step[batch.step < start])
    if steps.size == 0:
        return
    lo = int(steps[max(0, steps.size - ONSET_READINGS)])
    seen = {_DIGITS.sub("#", t) for s, t in notes if s < lo}
    kinds: dict[str, str] = {}  # one line per kind (the ranks' copies of one announcement are one)
    for s, t in notes:
        if lo <= s < start and (kind := _DIGITS.sub("#", t)) not in seen:
            kinds.setdefault(kind, t)
    said = list(kinds.values())[:2]
    if said:
        rep.summary += f" As it began (step {start}) the log said: " + "; ".join(f"'{t[:160]}'" for t in said) + "."
        if (rep.category is Category.INFRASTRUCTURE and not rep.stragglers and not rep.groups
                and any(SETTING_CHANGE.search(t) for t in said)):
            rep.category = Category.CONFIG
            rep.summary += (" That line announces new values of the job's own settings: the slowdown is what they "
                            "cost (config), not the platform's; check that they are meant.")


#: A log's last readings back at the baseline end an episode the streaming detector left open: at least this many
#: readings, each within this factor of the baseline (:func:`_end_recovered_tail`).
RECOVERED_TAIL_READINGS = 5
RECOVERED_TAIL_FACTOR = 1.1


def _end_recovered_tail(rep: SlowReport, batch: StepBatch, det: SlowDetector) -> None:
    """A log read after the fact: the last job episode, left ``ongoing`` by the streaming detector, ends at its last
    slow reading when the log's readings after it are all back near the baseline (at least
    :data:`RECOVERED_TAIL_READINGS` of them, within :data:`RECOVERED_TAIL_FACTOR` of it, covering the detector's
    ``min_recovery_steps`` steps or more; the streaming detector's episodes only, not the whole-log test's). Its
    factor and time lost are then those of its own span. The streaming detector closes an episode after
    ``min_recovery_steps`` *readings* back at the baseline: a log that prints every 50 steps needed 500 steps (e.g.
    a co-tenant's 15 s slowdown read "(ongoing)" though the last 450 steps were back at 4 ms)."""
    if not rep.job_slowdown or "whole-log" in rep.summary:
        return
    min_steps = det.cfg.min_recovery_steps
    ep = rep.job_slowdown[-1]
    base = ep.evidence[0].baseline_s if ep.evidence else None
    if not ep.ongoing or ep.intermittent or ep.growth or not base or base <= 0:
        return
    order = np.argsort(batch.step, kind="stable")
    step, t, w = batch.step[order], batch.step_time[order], batch.weight[order]
    inside = (step >= ep.start_step) & np.isfinite(t)
    if inside.sum() < RECOVERED_TAIL_READINGS + 1:
        return
    idx = np.flatnonzero(inside)
    slow = idx[t[idx] > base * RECOVERED_TAIL_FACTOR]
    if slow.size == 0:
        return
    last = int(slow[-1])
    tail = idx[idx > last]
    if tail.size < RECOVERED_TAIL_READINGS or float(w[tail].sum()) < min_steps:
        return
    span = idx[idx <= last]
    ws = w[span]
    ep.end_step = int(step[last])
    ep.ongoing = False
    ep.slowdown_factor = round(float(np.sum(t[span] * ws) / np.sum(ws) / base), 4)
    ep.time_lost_s = round(float(np.sum(np.clip(t[span] - base, 0.0, None) * ws)), 6)
    ep.steps = int(np.sum(ws))
    rep.time_lost_s = round(sum(e.time_lost_s for e in rep.job_slowdown), 6)
    rep.summary = det._summary(rep.job_slowdown, rep.stragglers, rep.groups)


#: The whole-log test's stretch replaces the streaming detector's episodes of a log when it costs at least this many
#: times all of them together (:func:`_whole_log`).
WHOLE_LOG_DWARFS = 3.0


def _whole_log(rep: SlowReport, batch: StepBatch) -> None:
    """A log read after the fact: the whole-log test (:func:`~diag_service.slow.offline.whole_log_episode`)
    where the streaming detector found no episode (too few records for its baseline, or a slowdown inside
    it), or where the step time climbs through the whole log (a growth, which the streaming detector sees
    as a late step up). A stretch found becomes the report's episode, category and summary."""
    ep = whole_log_episode(batch.step, batch.step_time, batch.weight, batch.end)
    # the streaming detector's episodes stand, unless the whole-log test's one stretch costs several times all of them
    # together: the streaming baseline, learned once, cut one long slowdown into short ones as its level drifted (e.g.
    # one 2.6x slowdown of 45 s read as three ~1.3x episodes worth 3.8 s)
    streamed = sum(e.time_lost_s for e in rep.job_slowdown)
    if ep is None or (rep.job_slowdown and not ep.growth and ep.time_lost_s < WHOLE_LOG_DWARFS * streamed):
        return
    rep.job_slowdown = [ep]
    rep.failure_mode = FailureMode.FAIL_SLOW
    rep.time_lost_s = ep.time_lost_s
    # the streaming detector's "too few records for a baseline" is answered by this test
    rep.input.warnings = [w for w in rep.input.warnings if "not enough to learn a baseline" not in w]
    rep.category = SlowDetector._category(rep.job_slowdown, rep.stragglers, rep.groups)
    base = ep.evidence[0].baseline_s if ep.evidence else None
    u = "s" if rep.units == "seconds" else f" {rep.units}"
    until = "to the end of the log" if ep.ongoing else f"to step {ep.end_step}"
    said = (f"The job ran {ep.slowdown_factor:.2f}x slower than before (baseline {base:.4g}{u}/step) from step "
            f"{ep.start_step} {until}, costing {ep.time_lost_s:.4g}{u} (whole-log change test).")
    if ep.growth:
        said = (f"The step time grew steadily through the log, {ep.slowdown_factor:.2f}x from its first quarter "
                f"({base:.4g}{u}/step) to its last: work per step that grows with the step count, most often history "
                "kept across steps (a hidden state or loss carried without detach(), so each backward runs through "
                "every earlier step, or a list or cache that each step walks).")
    rep.summary = said  # a log's series is the job's (rank -1): no straggler or group to keep


def _log_stragglers(rep: SlowReport, job: SlowDetector, ranks: StepBatch, config: SlowConfig | None) -> None:
    """A log whose step lines give every rank's own step and data-loading times
    (:attr:`~diag_service.slow.feeds.Feed.rank_batch`): the rank-level test of the streaming detector over
    those records names the rank the others wait for. Stragglers and groups found join ``rep`` (its job
    episodes, read from the job's series by ``job``, stay), with the category and summary they lead to."""
    det = SlowDetector(config, source=rep.input.source, fmt=rep.input.format, units=rep.units)
    stragglers: list[Straggler] = []
    groups: list[GroupFinding] = []
    if np.unique(ranks.step).size >= RANK_PHASE_MIN_STEPS:
        det._register_ranks(ranks.rank)
        for part in _sorted_steps(ranks):
            det.update(part)
        found = det.report()
        stragglers, groups = found.stragglers, found.groups
    if not (stragglers or groups) and rep.job_slowdown:
        one = _episode_phase_straggler(rep.job_slowdown[0], ranks, det.cfg.min_effect)
        stragglers = [one] if one is not None else []
    elif not (stragglers or groups):
        one = _stretch_phase_straggler(ranks, det.cfg.min_effect)
        stragglers = [one] if one is not None else []
    if not (stragglers or groups):
        return
    per_line = float(np.median(ranks.weight))  # a line every N steps stands for N steps of excess
    for st in stragglers:
        st.time_lost_s = round(st.time_lost_s * per_line, 6)
    rep.stragglers, rep.groups = stragglers, groups
    explain_episodes(rep.job_slowdown, stragglers)
    rep.failure_mode = FailureMode.FAIL_SLOW
    lead = rep.stragglers[0] if rep.stragglers and not rep.groups else None
    if not rep.job_slowdown or (lead is not None and lead.kind is StragglerKind.DATA and not lead.intermittent):
        rep.category = SlowDetector._category(rep.job_slowdown, rep.stragglers, rep.groups)
    # else the job's finding keeps its category: a log splits out only the data wait, so a rank paused anywhere
    # in its step shows there (a rank SIGSTOPped 150 ms of every 250 ms, CPU throttling, is an intermittent "data"
    # straggler on these lines): the rank is named, the kind does not say storage. One rank whose data time stays
    # above its peers' on every step (its shard heavier, its files re-exported in a slower format) is its data: zoo
    # dev, 2 of 2 such runs data; the one intermittent one a SIGSTOPped rank
    if rep.job_slowdown and "whole-log" not in rep.summary and "grew steadily" not in rep.summary:
        rep.summary = job._summary(rep.job_slowdown, rep.stragglers, rep.groups)  # the episode's phase is the straggler's
    else:  # the whole-log test's episode (or none): its words, then the stragglers'
        said = det._summary([], rep.stragglers, rep.groups)
        rep.summary = f"{rep.summary} {said}" if rep.job_slowdown and rep.summary else said


#: The checkpoint-cost test of a log: at least this many readings that cover a save before the change and after it.
CHECKPOINT_MIN_SAVES = 3
#: ... and the saves after it cost at least this share of the step time before (over a reading's iterations) more than
#: before: a save that grew from nothing to half a step's worth every save interval.
CHECKPOINT_MIN_EXTRA = 0.5
#: ... and at most this many save readings (a save every few steps is the job's rhythm, not a pause; the split search is
#: quadratic in the saves).
CHECKPOINT_MAX_SAVES = 512


def _checkpoint_slowdown(rep: SlowReport, batch: StepBatch, saves: frozenset[int]) -> None:
    """A log whose readings that cover a checkpoint save (``saves``: a save line before the reading in the same
    file) cost much more from some save on than the saves before it: writing the checkpoint got slower, which is the
    checkpoint storage (its throughput or IOPS, a throttled or nearly full volume), not the training steps. The
    streaming detector excludes such recurring outliers as checkpoint pauses (a job's normal pause never alarms), so
    this compares the saves with each other: per save reading, its excess over the median of the other readings
    around it (x its iterations); the split of the saves in time (at least :data:`CHECKPOINT_MIN_SAVES` on each side)
    where every later save but one costs more than every earlier one, and their median extra cost is at least
    :data:`CHECKPOINT_MIN_EXTRA` step times. Found: an episode from that save on (factor = mean step time since /
    before) leads the report, category storage. A save that was always slow is the job's pause, not this."""
    order = np.argsort(batch.step, kind="stable")
    step, t = batch.step[order], batch.step_time[order]
    w = batch.weight[order]
    is_save = np.isin(step, np.fromiter(saves, dtype=np.int64, count=len(saves)))
    idx = np.flatnonzero(is_save)
    plain = np.flatnonzero(~is_save)
    if idx.size < 2 * CHECKPOINT_MIN_SAVES or idx.size > CHECKPOINT_MAX_SAVES or plain.size < 10:
        return
    near = [plain[np.argsort(np.abs(plain - i), kind="stable")[:10]] for i in idx]
    ref = np.array([np.median(t[j]) for j in near])
    cost = (t[idx] - ref) * w[idx]  # seconds a save reading took beyond the steps around it
    found = _later_above(cost)  # every later save above every earlier one; else all but one (a save before the change)
    if found is None:
        return
    k, extra = found
    first = idx[k]
    base = float(np.median(t[:first][~is_save[:first]]))
    if not (base > 0 and extra >= CHECKPOINT_MIN_EXTRA * base * float(np.median(w[idx]))):
        return
    # the episode starts where the first slow save's reading starts: after the reading before it
    since = slice(int(idx[k - 1]) + 1, None)
    tw, ww = float((t[since] * w[since]).sum()), float(w[since].sum())
    factor = round((tw / ww) / base, 4) if ww > 0 else 1.0
    lost = float(np.clip(cost[k:] - np.median(cost[:k]), 0, None).sum())
    ep = SlowEpisode(start_step=int(step[idx[k - 1]]) + 1, end_step=None,
                     detected_at_step=int(step[idx[min(k + CHECKPOINT_MIN_SAVES - 1, idx.size - 1)]]), steps=int(ww),
                     slowdown_factor=factor, time_lost_s=round(lost, 6), ongoing=True, intermittent=True)
    _lead_with_saves(rep, ep, (
        f"Checkpoint saves got slower from the save at step {int(step[first])} on: each of the {idx.size - k} "
        f"since costs about {float(np.median(cost[k:])):.3g}s beyond the steps around it (about "
        f"{float(np.median(cost[:k])):.3g}s for the {k} before), {factor:.2f}x the step time before "
        f"({base:.4g}s/step) on average since: writing the checkpoint got slower, which points at the checkpoint "
        "storage (its throughput or IOPS, a throttled or nearly full volume), not at the training steps."))


def _lead_with_saves(rep: SlowReport, ep: SlowEpisode, said: str, category: Category = Category.STORAGE) -> None:
    """Make ``ep`` (checkpoint saves, or other periodic passes, that got slower) the report's leading episode, of
    ``category``, with ``said`` first in its summary; a larger slowdown of the report's own stays beside it."""
    kept = [e for e in rep.job_slowdown if e.slowdown_factor > ep.slowdown_factor]
    rep.job_slowdown = [ep, *kept]
    rep.failure_mode = FailureMode.FAIL_SLOW
    rep.category = category
    rep.time_lost_s = round(sum(e.time_lost_s for e in rep.job_slowdown), 6)
    rep.summary = f"{said} {rep.summary}" if kept else said


#: A log flood: from some reading on, the lines a file holds between two step readings of its own reach at least this
#: many per step ...
FLOOD_MIN_LINES_PER_STEP = 50.0
#: ... and at least this many times the rate before (a debug print or a DEBUG logger left on in the step loop).
FLOOD_MIN_RATIO = 20.0


def _log_flood(rep: SlowReport, evidence: Mapping[int, Any]) -> None:
    """A slowdown that follows a log flood: the step lines' own positions (``evidence``: step -> the step line's
    :class:`~diag_service.domain.Evidence`) show, for consecutive step lines of one file, how many lines the file holds
    per step between them; when that rate rises from some reading on to at least :data:`FLOOD_MIN_LINES_PER_STEP` and
    :data:`FLOOD_MIN_RATIO` times its median before (at least 3 readings on each side), no later than the slowdown's
    start plus two readings, the job's own output is the likely cost (every line is written, by every step, to a
    pipe or file a collector drains): category user_code, the flood first in the summary. E.g.
    3,000 DEBUG lines per step from step 30 on one node, 3x slower: the job's logging, not "infrastructure, check the
    straggler node's GPUs"."""
    if rep.failure_mode is not FailureMode.FAIL_SLOW or not rep.job_slowdown or rep.category is Category.STORAGE:
        return
    ev = sorted(evidence.items())
    rates = [(s1, e1.file, (e1.line - e0.line) / (s1 - s0)) for (s0, e0), (s1, e1) in zip(ev, ev[1:], strict=False)
             if e0.file == e1.file and s1 > s0 and e1.line > e0.line]
    if len(rates) < 6:
        return
    start = min(e.start_step for e in rep.job_slowdown)
    gaps = [b[0] - a[0] for a, b in zip(rates, rates[1:], strict=False)]
    slack = 2 * float(np.median(gaps)) if gaps else 0.0
    for i, (step, file, rate) in enumerate(rates):
        if rate < FLOOD_MIN_LINES_PER_STEP:
            continue
        before = [r for _s, _f, r in rates[:i]]
        after = [r for _s, f, r in rates[i:] if f == file]
        if len(before) < 3 or len(after) < 3 or step > start + slack:
            return
        was, now = float(np.median(before)), float(np.median(after))
        if now >= FLOOD_MIN_LINES_PER_STEP and now >= FLOOD_MIN_RATIO * max(was, 1.0):
            rep.category = Category.USER_CODE
            rep.summary = (f"From step {step} on, {file} holds about {now:,.0f} lines per training step ({was:.2g} "
                           "before): a log flood (a debug print or a DEBUG-level logger left on in the step loop); "
                           "writing it slows every step. " + rep.summary)
        return


def _later_above(cost: np.ndarray) -> tuple[int, float] | None:
    """``(k, rise)``: the split ``k`` of a series of save costs (at least :data:`CHECKPOINT_MIN_SAVES` on each side)
    where every later cost but at most one is above every earlier one, with the largest rise of the median (``rise``,
    the later median minus the earlier); None without one."""
    best = None
    for spare in (0, 1):
        for k in range(CHECKPOINT_MIN_SAVES, cost.size - CHECKPOINT_MIN_SAVES + 1):
            early, late = cost[:k], cost[k:]
            if np.sort(late)[spare if late.size > 3 else 0] <= early.max():
                continue
            extra = float(np.median(late) - np.median(early))
            if best is None or extra > best[1]:
                best = (k, extra)
        if best is not None:
            return best
    return None


def _stated_growth(batch: StepBatch, stated: tuple[tuple[int, float], ...]
                   ) -> tuple[int, float, np.ndarray, np.ndarray, float] | None:
    """The growth test of passes whose lines state their duration (``stated``: (step of the reading before the pass,
    seconds), in log order): from some pass on every pass but one takes longer than every pass before
    (:func:`_later_above`), and the later passes' median is longer than the earlier ones' by at least
    :data:`CHECKPOINT_MIN_EXTRA` of the training time between two passes (steps between passes x the median step time
    before). ``(k, extra, at, cost, interval)``: the first later pass, the rise in seconds, the passes' steps and
    seconds, the training seconds between two passes; None when they did not grow (or too few, too many)."""
    if len(stated) < 2 * CHECKPOINT_MIN_SAVES or len(stated) > CHECKPOINT_MAX_SAVES or len(batch) < 10:
        return None
    at = np.array([s for s, _ in stated], dtype=np.int64)
    cost = np.array([c for _, c in stated], dtype=float)
    found = _later_above(cost)
    if found is None:
        return None
    k, extra = found
    step, t = batch.step, batch.step_time
    before = t[step <= at[k - 1]]
    gaps = np.diff(at)
    if before.size == 0 or not np.any(gaps > 0):
        return None
    base = float(np.median(before))
    interval = float(np.median(gaps[gaps > 0])) * base  # training seconds between two passes
    if not (base > 0 and extra >= CHECKPOINT_MIN_EXTRA * interval):
        return None
    return k, extra, at, cost, interval


def _stated_episode(batch: StepBatch, k: int, at: np.ndarray, cost: np.ndarray) -> SlowEpisode:
    """The episode of passes that grew (:func:`_stated_growth`): from the pass after step ``at[k - 1]`` to the end;
    the time lost is the later passes' excess over the earlier ones' median."""
    order = np.argsort(batch.step, kind="stable")
    step, t = batch.step[order], batch.step_time[order]
    lost = float(np.clip(cost[k:] - np.median(cost[:k]), 0, None).sum())
    train_s = float(np.sum(t[step > at[k - 1]] * batch.weight[order][step > at[k - 1]]))
    factor = round((train_s + float(cost[k:].sum())) / train_s, 4) if train_s > 0 else 1.0
    return SlowEpisode(start_step=int(at[k - 1]) + 1, end_step=None,
                       detected_at_step=int(at[min(k + CHECKPOINT_MIN_SAVES - 1, at.size - 1)]),
                       steps=int(step.max() - at[k - 1]), slowdown_factor=max(factor, 1.0), time_lost_s=round(lost, 6),
                       ongoing=True, intermittent=True)


def _stated_save_slowdown(rep: SlowReport, batch: StepBatch, saves: tuple[tuple[int, float], ...]) -> None:
    """The same finding as :func:`_checkpoint_slowdown` from the durations the save lines state themselves (``saved
    checkpoint ... in 0.12s``), for logs whose step times leave the save out: the saves grew
    (:func:`_stated_growth`). Found: an episode from that save on, category storage; the time lost is the later
    saves' excess."""
    found = _stated_growth(batch, saves)
    if found is None:
        return
    k, _extra, at, cost, interval = found
    ep = _stated_episode(batch, k, at, cost)
    _lead_with_saves(rep, ep, (
        f"Checkpoint saves got slower from the save after step {int(at[k])} on: the save lines state "
        f"{float(np.median(cost[k:])):.3g}s each for the {cost.size - k} since (median), {float(np.median(cost[:k])):.3g}s "
        f"for the {k} before, against about {interval:.3g}s of training between two saves: writing the checkpoint got "
        "slower, which points at the checkpoint storage (its throughput or IOPS, a throttled or nearly full volume), "
        "not at the training steps."))


#: A periodic pass that states its own duration (evaluation, validation, an upload: :data:`PAUSE_LINE` of the log
#: reader) is the run's cost, not its rhythm, when it comes every this many training steps or fewer (the common
#: slip: ``eval_steps: 5`` meant as 500) ...
FREQUENT_PASS_STEPS = 10
#: ... at least this many times, and its stated durations add up to at least this share of the run's time (first to
#: last step line): the job spends more time evaluating than training.
FREQUENT_PASS_MIN = 5
FREQUENT_PASS_SHARE = 0.5


def _frequent_passes(rep: SlowReport, batch: StepBatch, pauses: Mapping[int, tuple[tuple[int, float], ...]]) -> None:
    """A log whose periodic passes between training steps state their durations (``pauses``, per writer: (step of the
    reading before, seconds)) and come every :data:`FREQUENT_PASS_STEPS` steps or fewer, adding up to
    :data:`FREQUENT_PASS_SHARE` or more of the time between the first and the last step line: an episode over the
    run whose cost is the passes' time, category config (how often the job evaluates is its own setting), said in
    place of the report's (left alone when it found a costlier slowdown). O(passes)."""
    ends = batch.end[np.isfinite(batch.end)]
    if ends.size < 2 or batch.step.size == 0:
        return
    wall = float(ends.max() - ends.min())
    steps = int(batch.step.max() - batch.step.min())
    if wall <= 0 or steps <= 0:
        return
    writer, stated = max(pauses.items(), key=lambda kv: sum(c for _, c in kv[1]))
    n, total = len(stated), float(sum(c for _, c in stated))
    if n < FREQUENT_PASS_MIN or steps / n > FREQUENT_PASS_STEPS or total < FREQUENT_PASS_SHARE * wall \
            or total < MATERIAL_SLOWDOWN_S or total <= rep.time_lost_s:
        return
    first = int(batch.step.min())
    ep = SlowEpisode(start_step=first, end_step=int(batch.step.max()), detected_at_step=first, steps=steps,
                     slowdown_factor=round(wall / max(wall - total, 1e-9), 3), time_lost_s=round(total, 6))
    rep.job_slowdown = [ep, *rep.job_slowdown]
    rep.time_lost_s = round(sum(e.time_lost_s for e in rep.job_slowdown), 6)
    rep.failure_mode = FailureMode.FAIL_SLOW
    rep.category = Category.CONFIG
    who = f"rank {writer}'s" if writer >= 0 else "the job's"
    rep.summary = (f"The job spent {total / wall:.0%} of its time ({total:.4g}s of {wall:.4g}s) in a periodic pass "
                   f"between training steps that its lines time ({who} evaluation / validation / upload lines): {n} "
                   f"passes, about one every {steps / n:.3g} steps, {float(np.median([c for _, c in stated])):.3g}s "
                   "each (median). Passes that often cost more than the training: run them less often (every few "
                   "hundred steps) or on a subset.")


def _stated_pause_slowdown(rep: SlowReport, batch: StepBatch, pauses: Mapping[int, tuple[tuple[int, float], ...]]) -> None:
    """Periodic passes between training steps (evaluation, validation, an upload or sync of the job's own) whose lines
    state their duration (``eval at step 109 done in 0.22s``) and got longer (:func:`_stated_growth`, per writer).
    Found: an episode from that pass on, led by the writer whose passes grew the most, category user_code (the job's
    own periodic work grew: an evaluation set or loop that grows, history kept and walked each pass). Passes of the
    same length throughout (a planned evaluation) are the run's rhythm and found nothing (e.g.
    a clean run's constant 4 s evaluations; rank 1's evaluation 20x heavier from step 50 is found)."""
    best: tuple[float, int, int, np.ndarray, np.ndarray, float] | None = None
    grew: list[float] = []  # every writer's rise, where its passes grew
    for rank, stated in pauses.items():
        found = _stated_growth(batch, stated)
        if found is None:
            continue
        k, extra, at, cost, interval = found
        grew.append(extra)
        if best is None or extra > best[0]:
            best = (extra, rank, k, at, cost, interval)
    if best is None:
        return
    extra, rank, k, at, cost, interval = best
    ep = _stated_episode(batch, k, at, cost)
    # several ranks' passes grew alike: the others wait for the slow one at the pass's end, so none is named
    alike = sum(e >= 0.5 * extra for e in grew) > 1
    who = "the ranks'" if alike else f"rank {rank}'s" if rank >= 0 else "the job's"
    said = (f"Periodic passes between training steps got longer from the one after step {int(at[k])} on: {who} "
            f"evaluation / upload lines state {float(np.median(cost[k:])):.3g}s each for the {cost.size - k} since "
            f"(median), {float(np.median(cost[:k])):.3g}s for the {k} before, against about {interval:.3g}s of training "
            "between two passes: the job's own periodic work grew (an evaluation set or loop that grows, history kept "
            "and walked every pass), not the training steps.")
    _lead_with_saves(rep, ep, said, Category.USER_CODE)


#: The whole-log rank comparison names a rank when its data wait (or, failing that, its own compute time) in excess of
#: its peers', on the episode's steps and above its excess before them, is at least this share of the episode's rise in
#: step time (the rank's wait or work is most of what the job lost) -- and at least ``min_effect`` of the step time
#: before the episode.
EPISODE_PHASE_SHARE = 0.5
#: ... and when that rise is significant against the rank's own excess before the episode: z >= 3.09 (one-sided
#: alpha = 0.001 per rank, the whole-log test's level; diag_service.slow.offline).
EPISODE_PHASE_Z = 3.09
#: The phases compared, in order (the first that names exactly one rank wins). Data first: a rank's longer data wait
#: is the one the others wait for. Compute only from lines that name it (``fwd_bwd 63.9 ms allreduce 6.4 ms``): a
#: synchronous job's ranks all take the slowest rank's step time, so only a rank's own compute, beside its peers',
#: shows which rank they waited for; a job-wide slowdown raises every rank's compute alike and names nobody.
EPISODE_PHASES = (StragglerKind.DATA, StragglerKind.COMPUTE)


def _episode_phase_straggler(ep: SlowEpisode, ranks: StepBatch, min_effect: float) -> Straggler | None:
    """A job episode found in a log with every rank's data wait, or its compute time, on its step lines, too few
    lines for the streaming rank test (a line every 10-50 steps): the one rank whose time in a phase
    (:data:`EPISODE_PHASES`, in order), over its peers' (their median; the other's when there are two), rose on the
    episode's steps by at least :data:`EPISODE_PHASE_SHARE` of the job's rise in step time, significantly
    (:data:`EPISODE_PHASE_Z`: the rise over the standard error from the rank's excess before the episode). ``None``
    when no rank or more than one does in every phase, or there are fewer than 2 of its lines in the episode or 2
    before it. Confidence ``1 - 0.5 ** (z / 3.09)``, the streaming test's form (evidence over threshold)."""
    for kind in EPISODE_PHASES:
        values = ranks.data if kind is StragglerKind.DATA else ranks.compute
        if np.isfinite(values).any():
            found = _episode_straggler(ep, ranks, values, kind, min_effect)
            if found is not None:
                return found
    return None


#: A short log with no job episode (its job-wide rise below the whole-log test's least effect): a rank's time in a
#: phase over its peers' median, as a ratio per line, tested for a rise of at least this much by the whole-log test
#: (:func:`~diag_service.slow.offline.find_shift`); the stretch found is then held to the episode test's rules
#: (:func:`_episode_straggler`: the job's step time rose over it, the rank's excess is most of that rise, z >= 3.09).
#: Zoo dev b43_slow_rank_quota_r1_tee: rank 1 at 40 % of a core from step 100, its compute 1.38x, the job 1.18x, one
#: line every 20 steps (18 lines): no job episode, so no rank was named. Over the zoo's dev runs this stretch test
#: names the labelled rank in all 7 runs with a rank's own phase on its lines, and no rank in the others.
STRETCH_PHASE_MIN_EFFECT = 0.25


def _grid(ranks: StepBatch, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, ranks, matrix)``: the batch's distinct steps and ranks (sorted) and ``values`` laid out as a
    (step x rank) matrix, NaN where a rank has no record of a step."""
    steps = np.unique(ranks.step)
    units = np.unique(ranks.rank)
    col = {int(r): i for i, r in enumerate(units)}
    row = {int(s): i for i, s in enumerate(steps)}
    out = np.full((steps.size, units.size), np.nan)
    for s, r, v in zip(ranks.step, ranks.rank, values, strict=True):
        out[row[int(s)], col[int(r)]] = v
    return steps, units, out


def _stretch_phase_straggler(ranks: StepBatch, min_effect: float) -> Straggler | None:
    """The one rank whose data wait (else compute time) rose over its peers' in a stretch of a log that has no job
    episode (:data:`STRETCH_PHASE_MIN_EFFECT`), confirmed by :func:`_episode_straggler` over that stretch; None when
    no rank or more than one does."""
    steps, units = np.unique(ranks.step), np.unique(ranks.rank)
    if units.size < 2:
        return None
    row = {int(s): i for i, s in enumerate(steps)}
    weight = np.ones(steps.size)
    for s, w in zip(ranks.step, ranks.weight, strict=True):
        weight[row[int(s)]] = w
    for kind in EPISODE_PHASES:
        values = ranks.data if kind is StragglerKind.DATA else ranks.compute
        if not np.isfinite(values).any():
            continue
        data = _grid(ranks, values)[2]
        found: list[Straggler] = []
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for j in range(units.size):
                ratio = data[:, j] / np.nanmedian(np.delete(data, j, axis=1), axis=1)
                ok = np.isfinite(ratio) & (ratio > 0)
                sh = find_shift(steps[ok], ratio[ok], weight[ok], min_effect=STRETCH_PHASE_MIN_EFFECT)
                if sh is None:
                    continue
                ep = SlowEpisode(start_step=sh.start_step, end_step=None if sh.ongoing else sh.end_step,
                                 detected_at_step=int(steps[-1]), steps=int(sh.hi - sh.lo), slowdown_factor=sh.factor,
                                 time_lost_s=0.0, ongoing=sh.ongoing)
                one = _episode_straggler(ep, ranks, values, kind, min_effect)
                if one is not None and one.rank == int(units[j]):
                    found.append(one)
        if len(found) == 1:
            return found[0]
        if found:
            return None
    return None


def _episode_straggler(ep: SlowEpisode, ranks: StepBatch, values: np.ndarray, kind: StragglerKind,
                       min_effect: float) -> Straggler | None:
    """:func:`_episode_phase_straggler` for one phase: ``values`` are each record's time in it (seconds; NaN where
    the line does not give it)."""
    hi = ep.end_step if ep.end_step is not None else np.inf
    steps, units, data = _grid(ranks, values)
    if units.size < 2:
        return None
    t = _grid(ranks, ranks.step_time)[2]
    inside = (steps >= ep.start_step) & (steps <= hi)
    before = steps < ep.start_step
    if inside.sum() < 2 or before.sum() < 2:
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        job_t = np.nanmedian(t, axis=1)
        base = float(np.nanmedian(job_t[before]))
        rise = float(np.nanmean(job_t[inside])) - base
        peer_med = np.full_like(data, np.nan)  # per step, the other ranks' median time in the phase
        for j in range(units.size):
            peer_med[:, j] = np.nanmedian(np.delete(data, j, axis=1), axis=1)
        excess = data - peer_med
        up = np.nanmean(excess[inside], axis=0) - np.nanmean(excess[before], axis=0)
        n_in = np.isfinite(excess[inside]).sum(axis=0)
        n_before = np.isfinite(excess[before]).sum(axis=0)
        sd = np.maximum(np.nanstd(excess[before], axis=0, ddof=1), 0.001 * base)
        z = up / (sd * np.sqrt(1.0 / np.maximum(n_in, 1) + 1.0 / np.maximum(n_before, 1)))
    if not (base > 0 and rise > 0):
        return None
    need = max(EPISODE_PHASE_SHARE * rise, min_effect * base)
    hit = np.flatnonzero(np.isfinite(up) & (up >= need) & (z >= EPISODE_PHASE_Z) & (n_in >= 2) & (n_before >= 2))
    if hit.size != 1:
        return None
    j = int(hit[0])
    ref = peer_med[inside, j]
    own = data[inside, j]
    ok = np.isfinite(own) & np.isfinite(ref)
    slow = ok & (own - ref >= min_effect * base)
    in_steps = steps[inside]
    return Straggler(
        rank=int(units[j]), kind=kind,
        slowdown_factor=round(float(own[ok].sum() / max(ref[ok].sum(), 1e-12)), 4),
        first_step=ep.start_step, last_step=int(in_steps[slow].max()) if slow.any() else ep.start_step,
        detected_at_step=ep.detected_at_step, confidence=round(1 - 0.5 ** (float(z[j]) / EPISODE_PHASE_Z), 3),
        intermittent=bool(slow.mean() < 0.7) if ok.any() else False,
        slow_fraction=round(float(slow.sum() / max(ok.sum(), 1)), 4),
        time_lost_s=round(float(np.clip(own[ok] - ref[ok], 0, None).sum()), 6), active=bool(ep.ongoing),
    )


def _empty_stats(fmt: str, batch: StepBatch):  # noqa: ANN202 - FeedStats
    from diag_service.slow.models import FeedStats

    return FeedStats(source=fmt, format=fmt, records=len(batch), phases=batch.phases())


def load_feed_member(member: FeedMember) -> Feed:
    """The feed of a bundle's timing-feed member: read from disk when it has a ``path`` (a folder's
    file), parsed from its ``text`` when it was read from an archive in the log pass. Raises
    :class:`~diag_service.slow.feeds.FeedError`."""
    if member.path is not None:
        return load_feed(member.path, member.root)
    text = member.text or ""
    if member.name.lower().endswith(".csv"):
        return csv_feed(text, member.name)
    return jsonl_feed(text.splitlines(), member.name, member.first_line)


_M = TypeVar("_M", Path, FeedMember)


def _per_rank_feeds(members: Sequence[_M], load: Callable[[_M], Feed]) -> Feed | None:
    """The JSONL feeds among ``members`` (in preference order) read together when there are several and each holds
    other ranks (:func:`~diag_service.slow.feeds.merge_rank_feeds`: a file per rank); None otherwise (the caller then
    reads the first). Trial 44 r11: of timing-rank0.jsonl and timing-rank1.jsonl only rank 0's was read, and its wait
    for the slow rank 1 read as a network slowdown."""
    jsonl = [m for m in members if feed_preference(m.name)[0] <= 1]
    if len(jsonl) < 2:
        return None
    return merge_rank_feeds([load(m) for m in jsonl], f"{jsonl[0].name} (+{len(jsonl) - 1} per-rank feed(s))")


def analyze_feeds(feeds: list[FeedMember], config: SlowConfig | None = None) -> SlowReport | None:
    """The fail-slow report of a bundle's preferred timing feed (of
    :meth:`~diag_service.ingest.open.Bundle.feeds`, by :func:`~diag_service.ingest.members.feed_preference`),
    or None without a feed or without records. Raises :class:`~diag_service.slow.feeds.FeedError`."""
    if not feeds:
        return None
    ordered = sorted(feeds, key=lambda f: feed_preference(f.name))
    feed = _per_rank_feeds(ordered, load_feed_member) or load_feed_member(ordered[0])
    if len(feed.batch) == 0:
        return None
    return analyze_slow(feed, config)


def analyze_bundle(path: str | Path, config: SlowConfig | None = None) -> SlowReport | None:
    """The fail-slow report of a log bundle, or None when it has neither a timing feed nor iteration lines.

    A bundle (directory, archive or file) is searched for a timing feed
    (:data:`~diag_service.ingest.members.FEED_MEMBER`), else for iteration lines. Raises
    :class:`~diag_service.slow.feeds.FeedError` if the path cannot be opened.
    """
    feed = load_feed(path)
    if len(feed.batch) == 0:
        return None
    return analyze_slow(feed, config)


def etpr_events(report: SlowReport, job: str) -> list[dict[str, Any]]:
    """ETPR lifecycle events for the report's episodes: ``slow_detected`` / ``slow_resolved``.

    One ``slow_detected`` per episode at its start time, with ``slowdown`` (the episode's factor), the
    category and the node to blame (a node finding, else the leading straggler's node); a
    ``slow_resolved`` at its end time when it ended. Episodes without absolute times (log lines without
    timestamps, normalised traces) are skipped. Field names are those of ``diag_service.etpr``'s events.
    """
    out: list[dict[str, Any]] = []
    node = next((g.name for g in report.groups if g.group == "node"), None)
    if node is None and report.stragglers:
        node = report.stragglers[0].node
    for ep in report.job_slowdown:
        if ep.start_time is None or report.units != "seconds":
            continue
        out.append({"job": job, "event": "slow_detected", "time": ep.start_time, "slowdown": max(1.0, ep.slowdown_factor),
                    "mode": "fail_slow", "category": str(report.category), "node": node, "step": ep.start_step,
                    "cause": f"{ep.kind} phase" if ep.kind else None})
        if ep.end_time is not None and not ep.ongoing:
            out.append({"job": job, "event": "slow_resolved", "time": ep.end_time, "step": ep.end_step})
    return out
