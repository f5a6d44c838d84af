"""ETPR accounting: turn normalised lifecycle events into a GPU-time ledger (the core of ``diag etpr``).

The algorithm is columnar (polars) so that a million jobs fit in seconds; the definitions it implements
are in ``docs/etpr.md``. In short, per job, events sorted by time define a piecewise-constant *state*
(queue, scheduling, init, ckpt_load, productive, ckpt_stall, detection, hang, post-failure, recovery,
released); every interval between two consecutive events gets the state in force at its start and
is charged ``gpus x seconds`` to the bucket of that state. Three things are retroactive and are
handled with pseudo events and per-episode windows:

* checkpoint stalls and checkpoint loads: ``duration`` seconds before the event;
* failure onset: ``onset_time`` before the detection event (detection delay, or hang duration);
* lost work: productive time between the checkpoint that the restart resumed from (the last checkpoint
  saved in the failed attempt, or ``restart.rollback_time``) and the failure onset.

Productive intervals that are not lost are split into productive ``dur * r`` and slow ``dur * (1 - r)``
with ``r = min(1, observed / expected throughput)`` (samples with ``r >= 1 - slow_tolerance`` count as 1).

Context-dependent events (a ``progress`` before any ``first_step``, a ``restart`` without a failure, a
``hang_detected`` during start-up, ...) are resolved in a fixed number of passes over the previous
state; every such resolution is counted as a warning or an assumption (:class:`~diag_service.etpr.schema.Issue`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from diag_service.domain import FailureMode
from diag_service.etpr.schema import (
    BUCKET_TERM,
    KILLED,
    NO_FAILURE,
    UNKNOWN_NODE,
    Bucket,
    EventType,
    Issue,
    Phase,
)


class State:
    """The state a job is in from a row on (small ints, so that forward fills and comparisons stay cheap)."""

    NONE = 0  # before the job's first state-setting event
    QUEUE = 1  # submitted, not allocated
    SCHEDULING = 2  # allocated, not started
    INIT = 3  # started (or restarted), before the first step
    CKPT_LOAD = 4  # loading a checkpoint (the duration before checkpoint_loaded)
    PRODUCTIVE = 5  # training
    CKPT_STALL = 6  # blocked saving a checkpoint (the duration before checkpoint_saved)
    DETECTION = 7  # failed, not yet detected (failure onset -> failure)
    HANG = 8  # hung, not yet detected (hang onset -> hang_detected)
    POST_FAILURE = 9  # detected, not diagnosed
    RECOVERY = 10  # diagnosed, not restarted
    RELEASED = 11  # allocation released (finished, killed, released)


PRE_EXECUTION = [State.SCHEDULING, State.INIT, State.CKPT_LOAD]
RUNNING = [State.PRODUCTIVE, State.CKPT_STALL]
ACTIVE = PRE_EXECUTION + RUNNING + [State.DETECTION, State.HANG]
EPISODE = [State.DETECTION, State.HANG, State.POST_FAILURE, State.RECOVERY]
AFTER_FAILURE = [State.POST_FAILURE, State.RECOVERY]
ALLOCATED = ACTIVE + AFTER_FAILURE
OUTSIDE = [State.NONE, State.QUEUE, State.RELEASED]

#: Events that end an allocation.
ENDS = (EventType.FINISHED, EventType.KILLED, EventType.RELEASED)
#: Event name -> small integer code (order is irrelevant; the codes only need to be stable).
EVENT_CODE: dict[str, int] = {e.value: i for i, e in enumerate(EventType)}
EV_CODE: dict[EventType, int] = {e: EVENT_CODE[e.value] for e in EventType}

FAILED_STATUSES = ["failed", "failure", "error", "crashed", "timeout", "killed", "cancelled", "preempted"]
OK_STATUSES = ["succeeded", "success", "successful", "completed", "complete", "ok", "pass", "passed", "done"]

#: Small integer codes of buckets and phases inside the computation, and the Enum dtypes of the output.
BUCKET_CODE: dict[Bucket, int] = {b: i for i, b in enumerate(Bucket)}
BUCKET_OF_CODE: dict[int, str] = {i: b.value for b, i in BUCKET_CODE.items()}
PHASE_CODE: dict[Phase, int] = {p: i for i, p in enumerate(Phase)}
PHASE_OF_CODE: dict[int, str] = {i: p.value for p, i in PHASE_CODE.items()}
BUCKET_ENUM = pl.Enum([b.value for b in Bucket])
PHASE_ENUM = pl.Enum([p.value for p in Phase])


class RowKind:
    """What a row of the timeline is: a real event or a pseudo event of a retroactive state change."""

    REAL = 0
    ONSET = 1  # failure / hang onset before its detection
    IMPLICIT_FAILURE = 2  # failure assumed before a restart that had none
    STALL = 3  # start of a checkpoint save's blocking time
    LOAD = 4  # start of a checkpoint load


_STATE_BUCKET_CODE: dict[int, int] = {
    State.QUEUE: BUCKET_CODE[Bucket.QUEUE],
    State.SCHEDULING: BUCKET_CODE[Bucket.SCHEDULING],
    State.INIT: BUCKET_CODE[Bucket.INIT],
    State.CKPT_LOAD: BUCKET_CODE[Bucket.CKPT_LOAD],
    State.CKPT_STALL: BUCKET_CODE[Bucket.CKPT_STALL],
    State.DETECTION: BUCKET_CODE[Bucket.DETECTION],
    State.HANG: BUCKET_CODE[Bucket.HANG],
    State.RECOVERY: BUCKET_CODE[Bucket.RECOVERY],
}


@dataclass
class Ledger:
    """Result of :func:`compute_ledger`.

    ``parts``: one row per (job, interval part) with ``jid, job_idx, t, wall_s, gpu_s, bucket, phase, mode,
    category, node, cause`` (seconds and GPU-seconds). ``jobs``: one row per job with ``jid, job, gpus,
    attempts, failures, first_time, last_time``; ``job_idx`` is the job's row number in ``jobs``.
    ``issues``: warnings and assumptions met on the way.
    """

    parts: pl.DataFrame
    jobs: pl.DataFrame
    issues: list[Issue] = field(default_factory=list)
    n_events: int = 0


def is_ev(*types: EventType) -> pl.Expr:
    """True where the row's event (column ``ev``, an :data:`EVENT_CODE`) is one of ``types``."""
    if len(types) == 1:
        return pl.col("ev") == EV_CODE[types[0]]
    return pl.col("ev").is_in([EV_CODE[t] for t in types])


def _in(col: str | pl.Expr, values: list[int]) -> pl.Expr:
    c = pl.col(col) if isinstance(col, str) else col
    return c.is_in(values)


def _issue_from_flag(df: pl.DataFrame, flag: str, kind: str, code: str, message: str, issues: list[Issue],
                     job_map: pl.DataFrame, count: int | None = None) -> None:
    """Append one aggregated issue if any row has ``flag`` true (examples: up to 5 job ids)."""
    if count is None:
        count = int(df.get_column(flag).sum())
    if not count:
        return
    jids = df.lazy().filter(pl.col(flag)).select("jid").unique(maintain_order=True).head(5).collect()
    jobs = jids.join(job_map, on="jid", how="left").get_column("job").to_list()
    issues.append(Issue(kind=kind, code=code, message=message, count=count, examples=[str(j) for j in jobs]))


def seg_ffill(col: pl.Expr, first: pl.Expr, sentinel: float | str) -> pl.Expr:
    """Forward fill within segments starting where ``first`` is true; ``sentinel`` marks "nothing yet"."""
    return pl.when(first & col.is_null()).then(pl.lit(sentinel)).otherwise(col).forward_fill()


def seg_next(col: pl.Expr, last: pl.Expr, sentinel: float | str) -> pl.Expr:
    """First non-null value strictly after each row within its segment (``last`` ends a segment);
    rows with none get ``sentinel`` (or null on the segment's last row)."""
    filled = pl.when(last & col.is_null()).then(pl.lit(sentinel)).otherwise(col).backward_fill()
    return pl.when(last).then(None).otherwise(filled.shift(-1))


def seg_cumsum(x: pl.Expr, first: pl.Expr) -> pl.Expr:
    """Cumulative sum restarting at every row where ``first`` is true (data sorted by segment)."""
    cs = x.cum_sum()
    return cs - pl.when(first).then(cs - x).forward_fill()


def job_key(job: pl.Expr) -> pl.Expr:
    """A 64-bit key per job id (polars hash, fixed seed).

    Collisions are not checked: by the birthday bound, n jobs collide with probability about
    n² / 2⁶⁵ (≈ 3e-8 for a million jobs); two colliding jobs would be accounted as one.
    """
    return job.hash(seed=0x5EED)


def _resolve_states(df: pl.DataFrame, passes: int = 3) -> pl.DataFrame:
    """Phase 4: add ``ps`` (state before the row) and ``hard`` (state the row sets, or null) to sorted events.

    Pass 0 uses context-free rules; each further pass re-applies the context rules with the ``ps`` of
    the previous pass, so that an ignored event (e.g. a ``hang_detected`` during start-up) no longer
    shapes the state of the rows after it.
    """
    first = pl.col("_first")

    def ffill_state(hard: pl.Expr) -> pl.Expr:
        # A sentinel on each job's first row keeps the global forward fill inside the job.
        return pl.when(first & hard.is_null()).then(pl.lit(State.NONE)).otherwise(hard).forward_fill()

    base = (
        pl.when(is_ev(EventType.SUBMITTED)).then(pl.lit(State.QUEUE))
        .when(is_ev(EventType.ALLOCATED)).then(pl.lit(State.SCHEDULING))
        .when(is_ev(EventType.STARTED, EventType.RESTART)).then(pl.lit(State.INIT))
        .when(is_ev(EventType.FIRST_STEP)).then(pl.lit(State.PRODUCTIVE))
        .when(is_ev(EventType.FAILURE, EventType.HANG_DETECTED)).then(pl.lit(State.POST_FAILURE))
        .when(is_ev(EventType.DIAGNOSED)).then(pl.lit(State.RECOVERY))
        .when(is_ev(*ENDS)).then(pl.lit(State.RELEASED))
        .otherwise(None)
    )
    df = df.with_columns(hard=base.cast(pl.Int8))
    for _ in range(passes):
        df = df.with_columns(
            ps=pl.when(first).then(pl.lit(State.NONE)).otherwise(ffill_state(pl.col("hard")).shift(1)).cast(pl.Int8)
        )
        ps = pl.col("ps")
        hard = (
            pl.when(is_ev(EventType.SUBMITTED)).then(pl.when(_in(ps, OUTSIDE)).then(pl.lit(State.QUEUE)))
            .when(is_ev(EventType.ALLOCATED)).then(pl.when(~_in(ps, ALLOCATED)).then(pl.lit(State.SCHEDULING)))
            .when(is_ev(EventType.STARTED, EventType.RESTART)).then(pl.lit(State.INIT))
            .when(is_ev(EventType.CHECKPOINT_LOADED)).then(pl.when(_in(ps, PRE_EXECUTION)).then(pl.lit(State.INIT)))
            .when(is_ev(EventType.FIRST_STEP)).then(pl.when(~_in(ps, RUNNING)).then(pl.lit(State.PRODUCTIVE)))
            .when(is_ev(EventType.PROGRESS)).then(pl.when(_in(ps, PRE_EXECUTION + OUTSIDE)).then(pl.lit(State.PRODUCTIVE)))
            .when(is_ev(EventType.CHECKPOINT_SAVED)).then(
                pl.when((ps == State.PRODUCTIVE) & (pl.col("duration") > 0)).then(pl.lit(State.PRODUCTIVE)))
            .when(is_ev(EventType.FAILURE)).then(pl.when(_in(ps, ACTIVE)).then(pl.lit(State.POST_FAILURE)))
            .when(is_ev(EventType.HANG_DETECTED)).then(pl.when(_in(ps, RUNNING)).then(pl.lit(State.POST_FAILURE)))
            .when(is_ev(EventType.DIAGNOSED)).then(pl.when(_in(ps, AFTER_FAILURE)).then(pl.lit(State.RECOVERY)))
            .when(is_ev(*ENDS)).then(
                pl.when(ps != State.RELEASED).then(pl.lit(State.RELEASED)))
            .otherwise(None)
        )
        df = df.with_columns(hard=hard.cast(pl.Int8))
    return df


_HASHED = ["jid", "t", "ev", "gpus", "throughput", "expected_throughput", "ratio", "slowdown", "duration",
           "onset_time", "rollback_time", "step", "from_step", "_failed", "mode", "category", "node", "cause"]


def _dedupe_and_order(df: pl.DataFrame, job_map: pl.DataFrame, attrs: pl.DataFrame) -> tuple[pl.DataFrame, list[Issue]]:
    """On events sorted by (jid, t, seq): drop exact duplicates (same job, time, type and fields; compared by a
    64-bit hash among rows that share their job and time) and count events that came out of time order."""
    issues: list[Issue] = []
    same_prev = pl.col("jid") == pl.col("jid").shift(1)
    df = df.with_columns(_ooo=(same_prev & (pl.col("seq") < pl.col("seq").shift(1))).fill_null(False))
    _issue_from_flag(df, "_ooo", "warning", "out_of_order",
                     "events out of time order within a job (input order); they are sorted by time, ties keep input "
                     "order", issues, job_map)
    tie = ((same_prev & (pl.col("t") == pl.col("t").shift(1))).fill_null(False)
           | ((pl.col("jid") == pl.col("jid").shift(-1)) & (pl.col("t") == pl.col("t").shift(-1))).fill_null(False))
    sub = df.with_row_index("_ri").filter(tie)
    if sub.height:
        sub = sub.join(attrs, left_on="seq", right_on="_rid", how="left", maintain_order="left")
        dup = sub.select("_ri", "jid", _h=_row_hash()).filter(~pl.col("_h").is_first_distinct())
        if dup.height:
            ex = dup.select("jid").unique(maintain_order=True).head(5).join(job_map, on="jid", how="left")
            issues.append(Issue(kind="warning", code="duplicate_event",
                                message="exact duplicate events (same job, type, time and fields); dropped",
                                count=dup.height, examples=ex.get_column("job").to_list()))
            df = df.with_row_index("_ri").filter(~pl.col("_ri").is_in(dup.get_column("_ri").implode())).drop("_ri")
            # a dropped duplicate may have been its job's last row (the first copy is kept, so _first holds)
            df = df.with_columns(_last=(pl.col("jid") != pl.col("jid").shift(-1)).fill_null(True))
    return df.drop(["_ooo"]), issues


def _sort_events(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Sort by (job, time, input order) with one single-key sort: ``_key = job index x (rows + 1) + time rank``,
    the time rank being the ordinal rank of time over all rows (ties in input order; ``df`` is in input order).

    Returns the sorted frame (with ``_key`` as Float64, exact below 2**53, and ``_k`` the job index) and all
    times sorted, so that pseudo events can be given keys that place them without another sort.
    """
    if not bool((df.get_column("seq").diff().drop_nulls() > 0).all()):  # not in input order: put it there first
        df = df.sort("seq")
    # columns with no value at all are not carried through the sort's gather; they come back as nulls
    empty = {c: dt for c, dt in df.schema.items() if df.get_column(c).null_count() == df.height and df.height}
    schema = df.schema
    df = df.drop(list(empty))
    n = df.height
    uniq = df.select(pl.col("jid").unique())
    idx = uniq.with_columns(_k=pl.int_range(uniq.height, dtype=pl.UInt64))
    k = df.select("jid").join(idx, on="jid", how="left", maintain_order="left").get_column("_k")
    rank = df.select(pl.col("time").rank("ordinal").cast(pl.UInt64)).to_series()
    # all times in ascending order, from the ranks (a scatter, not another sort)
    t_sorted = pl.Series("t", [0.0] * 0, dtype=pl.Float64).extend_constant(0.0, n).scatter(
        rank - 1, df.get_column("time"))
    df = df.with_columns(_k=k, _key=(k * pl.lit(n + 1, pl.UInt64) + rank)).sort("_key")
    df = df.with_columns([pl.lit(None, dt).alias(c) for c, dt in empty.items()])
    return df.select([*schema, "_k", "_key"]).with_columns(pl.col("_key").cast(pl.Float64)), t_sorted


def _per_segment(n_seg: int, at: pl.Series, values: pl.DataFrame) -> pl.DataFrame:
    """A frame of ``n_seg`` rows, one per segment id, with the rows of ``values`` placed at the ids ``at``
    (distinct) and nulls elsewhere; ``frame[c].gather(segment_id_of_each_row)`` then reaches every row."""
    cols = []
    for c in values.get_columns():
        base = pl.repeat(None, n_seg, dtype=c.dtype, eager=True).alias(c.name)
        cols.append(base.scatter(at, c) if at.len() else base)
    return pl.DataFrame(cols)


def _row_hash() -> pl.Expr:
    """64-bit hash of an event's canonical fields (job, type, time and payload), for duplicate detection."""
    h = pl.lit(0, pl.UInt64)
    for i, c in enumerate(_HASHED):
        h = h ^ (pl.col(c).hash(seed=i + 1) * pl.lit(2 * i + 3, pl.UInt64))
    return h


def compute_ledger(events: pl.DataFrame, slow_tolerance: float = 0.05, by_week: bool = False,
                   expected_quantile: float = 0.9) -> Ledger:
    """Account every job's allocated GPU time into buckets (see the module docstring and ``docs/etpr.md``).

    ``events``: the output of :func:`diag_service.etpr.loaders.normalize_events` (columns of
    :data:`~diag_service.etpr.schema.EVENT_COLUMNS` plus ``seq``). ``slow_tolerance``: throughput ratios
    ``r >= 1 - slow_tolerance`` count as nominal (default 0.05, so that step-time jitter is not called
    fail-slow). ``expected_quantile``: when a job gives no ``expected_throughput``, its expected rate is this
    quantile of its own throughput samples (default 0.9: a rate it demonstrably sustained; the median would
    call a job that ran slow most of the time nominal). ``by_week``: split interval parts at ISO-week
    boundaries (UTC) and add a ``week`` column.
    Times in unix seconds; the ledger is in seconds and GPU-seconds.

    The phases, in order (each a function below): numeric events and side tables, sort and de-duplicate,
    GPUs in force, states, context rules, pseudo events, timeline, attempts and episodes, lost work,
    throughput ratio, buckets and phases, attribution.
    """
    if events.height == 0:
        return _empty_ledger()
    issues: list[Issue] = []
    df, attrs_real, src_jobs = _numeric_events(events)
    df, t_sorted, job_map = _sort_and_dedupe(df, src_jobs, attrs_real, issues)
    df, job_times = _gpus_in_force(df, job_map, issues)
    df = _resolve_states(df)
    df = _apply_context_rules(df, job_map, issues)
    df = _mark_anchors(df, job_map, issues)
    rid_next = float(events.get_column("seq").max() or 0) + 1.0
    pseudo, attrs = _pseudo_events(df, attrs_real, rid_next, issues)
    df = _timeline(df, pseudo, t_sorted, n_keys=events.height + 1)
    del pseudo
    df = _segment_attempts_and_episodes(df)
    attempts = _attempts(df)
    episodes = _episodes(df, attempts, attrs, job_map, issues)
    df, lost_rows = _lost_work(df, episodes)
    df = _throughput_ratio(df, job_map, slow_tolerance, expected_quantile, issues)
    df = _bucket_rows(df, attempts, lost_rows)
    parts = _attribute(_parts(df), episodes, attrs)
    del df
    if by_week:
        parts = _split_weeks(parts)
    jobs = df_jobs(job_map, job_times, episodes, attempts)
    return Ledger(parts=parts, jobs=jobs, issues=issues, n_events=events.height)


def _empty_ledger() -> Ledger:
    """The ledger of no events: empty ``parts`` and ``jobs`` with their column types."""
    empty = pl.DataFrame(schema={"jid": pl.UInt64, "job_idx": pl.UInt32, "t": pl.Float64,
                                 "wall_s": pl.Float64, "gpu_s": pl.Float64,
                                 "bucket": pl.String, "phase": pl.String, "mode": pl.String,
                                 "category": pl.String, "node": pl.String, "cause": pl.String})
    jobs = pl.DataFrame(schema={"jid": pl.UInt64, "job": pl.String, "gpus": pl.Float64, "attempts": pl.UInt32,
                                "failures": pl.UInt32, "first_time": pl.Float64, "last_time": pl.Float64})
    return Ledger(empty, jobs, [], 0)


ATTRIBUTE_COLUMNS = ["mode", "category", "node", "cause"]


def _numeric_events(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """Phase 1: the numeric frame the rest works on, in input order.

    Returns ``(df, attrs, jobs)``: ``df`` has the event code ``ev``, the job key ``jid``, the numeric payload,
    ``_failed``/``_ok`` (the finish status), ``_hang_mode``, ``_has_attr`` and ``_src`` (input row number);
    ``attrs`` is the side table of string attributes (``_rid`` = ``seq``, mode, category, node, cause) of the
    rows that have any; ``jobs`` the job id of each input row. Strings leave the big frame before the sort.
    """
    ev_code = (pl.col("event").to_physical().cast(pl.Int8) if isinstance(events.schema["event"], pl.Enum)
               else pl.col("event").cast(pl.String).replace_strict(EVENT_CODE, return_dtype=pl.Int8))
    df = events.with_columns(ev=ev_code, seq=pl.col("seq").cast(pl.Float64))
    if "jid" not in df.columns:
        df = df.with_columns(jid=job_key(pl.col("job")))
    has_attr = pl.any_horizontal([pl.col(c).is_not_null() for c in ATTRIBUTE_COLUMNS])
    attrs = df.lazy().filter(has_attr).select(pl.col("seq").alias("_rid"), *ATTRIBUTE_COLUMNS).collect()
    jobs = df.get_column("job")
    # status spellings are few: lower-case the distinct values, not every row
    statuses = df.get_column("status").drop_nulls().unique().to_list()
    failed_sp = [v for v in statuses if v.lower() in FAILED_STATUSES]
    ok_sp = [v for v in statuses if v.lower() in OK_STATUSES]
    df = df.select("jid", "seq", "ev", "time", "gpus", "throughput", "expected_throughput", "ratio", "slowdown",
                   "duration", "onset_time", "rollback_time", "step", "from_step",
                   _failed=pl.col("status").is_in(failed_sp).fill_null(False),
                   _ok=pl.col("status").is_in(ok_sp).fill_null(False),
                   _hang_mode=(pl.col("mode") == FailureMode.FAIL_HANG.value).fill_null(False),
                   _has_attr=has_attr, _src=pl.int_range(pl.len(), dtype=pl.UInt32))
    return df, attrs, jobs


def _sort_and_dedupe(df: pl.DataFrame, src_jobs: pl.Series, attrs: pl.DataFrame, issues: list[Issue]
                     ) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame]:
    """Phase 2: sort by (job, time, input order), flag each job's ``_first``/``_last`` row, drop exact
    duplicates and count out-of-order events.

    Returns ``(df, t_sorted, job_map)``: ``df`` with ``t`` (the time) and ``_key`` (see :func:`_sort_events`),
    all times ascending, and ``job_map`` (``jid, job``: one row per job, in job-index order).
    """
    df, t_sorted = _sort_events(df)
    df = df.rename({"time": "t"})
    df = df.with_columns(_first=pl.col("jid") != pl.col("jid").shift(1),
                         _last=pl.col("jid") != pl.col("jid").shift(-1)).with_columns(
        _first=pl.col("_first").fill_null(True), _last=pl.col("_last").fill_null(True))
    heads = df.filter(pl.col("_first")).select("jid", "_src")
    job_map = heads.select("jid", job=src_jobs.gather(heads.get_column("_src")))
    df = df.drop("_src")
    df, dup_issues = _dedupe_and_order(df, job_map, attrs)
    issues += dup_issues
    return df, t_sorted, job_map


def _gpus_in_force(df: pl.DataFrame, job_map: pl.DataFrame, issues: list[Issue]
                   ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Phase 3: ``gpus_f``, the GPUs in force at each row: forward filled within the job; rows before the job's
    first value take the next value at or after them; a job with none counts as 1 GPU (warning ``no_gpus``).

    Returns ``(df, job_times)``; ``job_times``: ``jid, first_time, last_time, gpus`` (the last value).
    """
    g_next = pl.when(pl.col("_last") & pl.col("gpus").is_null()).then(pl.lit(float("nan"))).otherwise(
        pl.col("gpus")).backward_fill()
    df = df.with_columns(gpus_f=seg_ffill(pl.col("gpus"), pl.col("_first"), float("nan"))).with_columns(
        gpus_f=pl.when(pl.col("gpus_f").is_nan()).then(g_next.fill_nan(None)).otherwise(pl.col("gpus_f")))
    no_gpus = df.lazy().filter(pl.col("_first") & pl.col("gpus_f").is_null()).select("jid").collect().join(
        job_map, on="jid", how="left", maintain_order="left")
    if no_gpus.height:
        issues.append(Issue(kind="warning", code="no_gpus",
                            message="no event of the job carries gpus; the job is weighted as 1 GPU",
                            count=no_gpus.height, examples=no_gpus.get_column("job").head(5).to_list()))
    df = df.with_columns(gpus_f=pl.col("gpus_f").fill_null(1.0))
    job_times = df.filter(pl.col("_first")).select("jid", first_time="t").join(
        df.filter(pl.col("_last")).select("jid", last_time="t", gpus="gpus_f"), on="jid")
    return df, job_times


def _context_flags() -> dict[str, pl.Expr]:
    """One boolean expression per context rule of :data:`CONTEXT_RULES`, on rows with ``ev``, ``ps`` (the state
    before the row) and ``hard`` (the state the row sets)."""
    ps, hard = pl.col("ps"), pl.col("hard")
    return {
        "w_submitted": is_ev(EventType.SUBMITTED) & hard.is_null(),
        "w_alloc": is_ev(EventType.ALLOCATED) & hard.is_null(),
        "w_restart_nofail": is_ev(EventType.RESTART) & _in(ps, ACTIVE),
        "w_started_running": is_ev(EventType.STARTED) & _in(ps, RUNNING + [State.DETECTION, State.HANG]),
        "w_restart_outside": is_ev(EventType.RESTART) & _in(ps, OUTSIDE),
        "w_first_dup": is_ev(EventType.FIRST_STEP) & _in(ps, RUNNING),
        "w_first_nores": is_ev(EventType.FIRST_STEP) & _in(ps, AFTER_FAILURE),
        "w_noalloc": is_ev(EventType.FIRST_STEP, EventType.PROGRESS) & _in(ps, OUTSIDE)
        & (hard.is_not_null()),
        "w_start_noalloc": is_ev(EventType.STARTED) & _in(ps, OUTSIDE),
        "w_prog_implicit": is_ev(EventType.PROGRESS) & _in(ps, PRE_EXECUTION),
        "w_prog_stray": is_ev(EventType.PROGRESS) & _in(ps, AFTER_FAILURE),
        "w_hang_pre": is_ev(EventType.HANG_DETECTED) & _in(ps, PRE_EXECUTION),
        "w_fail_outside": is_ev(EventType.FAILURE, EventType.HANG_DETECTED)
        & _in(ps, OUTSIDE),
        "w_diag_nofail": is_ev(EventType.DIAGNOSED) & ~_in(ps, AFTER_FAILURE),
        "w_end_dup": is_ev(*ENDS) & (ps == State.RELEASED),
        "w_hang_noonset": is_ev(EventType.HANG_DETECTED) & _in(ps, RUNNING) & pl.col("onset_time").is_null(),
        "w_after_end": (ps == State.RELEASED) & ~is_ev(EventType.SUBMITTED, EventType.ALLOCATED, EventType.STARTED,
                                                        EventType.RESTART, *ENDS),
    }


#: The context rules reported as issues: (flag of :func:`_context_flags`, kind, code, message), in report order.
CONTEXT_RULES: list[tuple[str, str, str, str]] = [
    ("w_submitted", "warning", "submitted_while_active", "submitted while already queued or allocated; ignored"),
    ("w_alloc", "warning", "allocated_while_allocated",
     "allocated while already allocated (no released/killed before it); the allocation is assumed held"),
    ("w_restart_nofail", "warning", "restart_without_failure",
     "restart while the job was running and no failure was reported: a failure is assumed at the last event "
     "before the restart (last sign of life); the time from there to the restart counts as recovery"),
    ("w_started_running", "warning", "started_while_running",
     "started while the job was training: treated as a restart after an unreported failure"),
    ("w_restart_outside", "warning", "restart_outside_allocation",
     "restart with no allocation in force: the allocation is assumed to begin at the restart"),
    ("w_first_dup", "warning", "duplicate_first_step", "second first_step in one attempt; ignored"),
    ("w_first_nores", "warning", "first_step_without_restart",
     "first_step after a failure without a restart event: a new attempt is assumed to begin there"),
    ("w_noalloc", "assumption", "allocation_from_first_activity",
     "no allocated/started before the job's first activity: allocated time starts at that event "
     "(pre-execution time before it is unknown and not counted)"),
    ("w_start_noalloc", "assumption", "allocation_from_started",
     "no allocated event before started: allocated time is assumed to begin at started (scheduling time 0)"),
    ("w_prog_implicit", "warning", "missing_first_step",
     "progress before any first_step in the attempt: productive time is assumed to start at that progress"),
    ("w_prog_stray", "warning", "progress_after_failure",
     "progress after a failure and before any restart: ignored (emit restart when the job resumes)"),
    ("w_hang_pre", "warning", "hang_before_first_step",
     "hang_detected before the attempt's first step (no progress yet to stall): ignored, the time stays "
     "pre-execution"),
    ("w_fail_outside", "warning", "failure_outside_allocation", "failure/hang with no allocation in force; ignored"),
    ("w_diag_nofail", "warning", "diagnosed_without_failure", "diagnosed with no open failure; ignored"),
    ("w_end_dup", "warning", "duplicate_end", "finished/killed/released after the job had already ended; ignored"),
    ("w_hang_noonset", "assumption", "hang_without_onset",
     "hang_detected without onset_time/last_progress_time: the hang is assumed to start at detection "
     "(hang duration 0, its time stays productive)"),
    ("w_after_end", "warning", "event_after_end",
     "event after the job released its allocation (finished/killed/released); not counted"),
]


def _apply_context_rules(df: pl.DataFrame, job_map: pl.DataFrame, issues: list[Issue]) -> pl.DataFrame:
    """Phase 5: count every context rule of :data:`CONTEXT_RULES` that fires (the states already apply them)."""
    df = df.with_columns(**_context_flags())
    flags = [flag for flag, *_ in CONTEXT_RULES]
    counts = df.select([pl.col(c).sum() for c in flags]).row(0, named=True)
    for flag, kind, code, msg in CONTEXT_RULES:
        _issue_from_flag(df, flag, kind, code, msg, issues, job_map, int(counts[flag] or 0))
    return df.drop(flags)


def _mark_anchors(df: pl.DataFrame, job_map: pl.DataFrame, issues: list[Issue]) -> pl.DataFrame:
    """Phase 6: the times pseudo events are placed against, and episodes that end a job.

    Adds ``t_last_hard`` (time of the last state-setting row before each row: onsets and durations are
    clamped to it), ``t_prev`` / ``_key_prev`` (the previous row's time and sort key), ``ep_end`` (a ``killed``
    or failed ``finished`` while active: a loss episode of its own, warning ``failed_without_failure_event``
    for the latter) and ``_rid`` (the row's key in the attribute side table, null if it has no attribute).
    """
    ps = pl.col("ps")
    df = df.with_columns(
        t_last_hard=pl.when(pl.col("_first")).then(pl.col("t"))
        .otherwise(pl.when(pl.col("hard").is_not_null()).then(pl.col("t")).forward_fill().shift(1)),
        t_prev=pl.when(pl.col("_first")).then(pl.col("t")).otherwise(pl.col("t").shift(1)),
        _key_prev=pl.when(pl.col("_first")).then(pl.col("_key")).otherwise(pl.col("_key").shift(1)),
    )
    df = df.with_columns(
        ep_end=(is_ev(EventType.KILLED) | (is_ev(EventType.FINISHED) & pl.col("_failed")))
        & _in(ps, ACTIVE),
    )
    _issue_from_flag(df.select("jid", _f=pl.col("ep_end") & is_ev(EventType.FINISHED)), "_f", "warning",
                     "failed_without_failure_event",
                     "finished with a failed status while running, and no failure event: a fail_stop of unknown "
                     "category is assumed at that time", issues, job_map)
    return df.with_columns(_rid=pl.when(pl.col("_has_attr")).then(pl.col("seq")))


def _pseudo_events(df: pl.DataFrame, attrs_real: pl.DataFrame, rid_next: float, issues: list[Issue]
                   ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Phase 7: rows for the retroactive state changes (``jid, _k, gpus_f, t, ev, hard, pseudo`` …).

    * onset: a failure/hang with an ``onset_time`` while running starts detection (or hang) at the onset,
      clamped to the last state change (assumption ``onset_clamped``);
    * implicit failure: a ``restart`` while active, or ``started`` while running, is preceded by a failure at
      the previous event (placed by ``_anchor``, just after it);
    * checkpoint stall / load: ``duration`` seconds before ``checkpoint_saved`` (running) or
      ``checkpoint_loaded`` (starting up).

    Returns ``(pseudo, attrs)``: ``attrs`` is ``attrs_real`` plus one row per implicit failure (``_rid`` from
    ``rid_next`` on).
    """
    ev, ps = pl.col("ev"), pl.col("ps")
    is_fail = is_ev(EventType.FAILURE, EventType.HANG_DETECTED)
    onset = pl.min_horizontal(pl.max_horizontal(pl.col("onset_time"), pl.col("t_last_hard")), pl.col("t"))
    hang_like = is_ev(EventType.HANG_DETECTED) | pl.col("_hang_mode")
    onset_rows = df.lazy().filter(is_fail & _in(ps, RUNNING) & pl.col("onset_time").is_not_null()
                                  & (onset < pl.col("t"))).select(
        "jid", "_k", "gpus_f", "_rid", "onset_time", "t_last_hard", t=onset, ev=ev,
        pseudo=pl.lit(RowKind.ONSET, pl.Int8),
        hard=pl.when(hang_like).then(pl.lit(State.HANG)).otherwise(pl.lit(State.DETECTION)).cast(pl.Int8)).collect()
    clamped = onset_rows.filter(pl.col("onset_time") < pl.col("t_last_hard") - 1e-9).height
    if clamped:
        issues.append(Issue(kind="assumption", code="onset_clamped",
                            message="onset_time before the last state change (a checkpoint, the first step): "
                                    "the onset is moved to that change", count=clamped))
    onset_rows = onset_rows.drop(["onset_time", "t_last_hard"])  # _rid: the source row's attributes
    implicit_rows = df.lazy().filter(
        (is_ev(EventType.RESTART) & _in(ps, ACTIVE)) | (is_ev(EventType.STARTED) & _in(ps, RUNNING))
    ).select(
        "jid", "_k", "gpus_f", t=pl.col("t_prev"), ev=pl.lit(EV_CODE[EventType.FAILURE]).cast(pl.Int8),
        hard=pl.lit(State.POST_FAILURE).cast(pl.Int8), pseudo=pl.lit(RowKind.IMPLICIT_FAILURE, pl.Int8),
        _anchor=pl.col("_key_prev") + 0.25,
    ).collect()
    implicit_rows = implicit_rows.with_columns(
        _rid=pl.int_range(0, implicit_rows.height, dtype=pl.Int64).cast(pl.Float64) + rid_next)
    attrs_implicit = implicit_rows.select("_rid", mode=pl.lit(None, pl.String), category=pl.lit(None, pl.String),
                                          node=pl.lit(None, pl.String),
                                          cause=pl.lit("implicit: restart without a failure event"))
    attrs = pl.concat([attrs_real, attrs_implicit], how="vertical_relaxed")
    dur_start = pl.max_horizontal(pl.col("t") - pl.col("duration"), pl.col("t_last_hard"))
    stall_rows = df.lazy().filter(is_ev(EventType.CHECKPOINT_SAVED) & (ps == State.PRODUCTIVE)
                                  & (pl.col("duration") > 0) & (dur_start < pl.col("t"))).select(
        "jid", "_k", "gpus_f", t=dur_start, ev=pl.lit(-1).cast(pl.Int8), hard=pl.lit(State.CKPT_STALL).cast(pl.Int8),
        pseudo=pl.lit(RowKind.STALL, pl.Int8)).collect()
    load_rows = df.lazy().filter(is_ev(EventType.CHECKPOINT_LOADED) & _in(ps, PRE_EXECUTION)
                                 & (pl.col("duration") > 0) & (dur_start < pl.col("t"))).select(
        "jid", "_k", "gpus_f", t=dur_start, ev=pl.lit(-1).cast(pl.Int8), hard=pl.lit(State.CKPT_LOAD).cast(pl.Int8),
        pseudo=pl.lit(RowKind.LOAD, pl.Int8)).collect()
    pseudo = pl.concat([onset_rows, implicit_rows, stall_rows, load_rows], how="diagonal_relaxed")
    return pseudo, attrs


def _timeline(df: pl.DataFrame, pseudo: pl.DataFrame, t_sorted: pl.Series, n_keys: int) -> pl.DataFrame:
    """Phase 8: real rows (numeric columns only) and pseudo rows merged in time order; ``st`` the state in force
    from each row on, ``dur`` the seconds to the job's next row (0 on its last row)."""
    real = df.select(
        "jid", "_k", "_key", "gpus_f", "t", "ev", "hard", "ps", "_rid", "throughput", "ratio", "slowdown",
        "expected_throughput", "rollback_time", "ep_end", "_ok", pseudo=pl.lit(RowKind.REAL, pl.Int8),
    )
    df = _insert_sorted(real, pseudo, t_sorted, n_keys)
    # rows are in job-index order (the key starts with it): flag it, so that group-bys on it take the sorted path
    df = df.with_columns(pl.col("_k").cast(pl.UInt32).set_sorted())
    df = df.with_columns(
        _first=(pl.col("jid") != pl.col("jid").shift(1)).fill_null(True),
        _last=(pl.col("jid") != pl.col("jid").shift(-1)).fill_null(True),
        ep_end=pl.col("ep_end").fill_null(False),
    )
    df = df.with_columns(
        st=pl.when(pl.col("_first") & pl.col("hard").is_null()).then(pl.lit(State.NONE)).otherwise(pl.col("hard"))
        .forward_fill().cast(pl.Int8),
    )
    return df.with_columns(
        prev_st=pl.when(pl.col("_first")).then(pl.lit(None)).otherwise(pl.col("st").shift(1)),
        dur=pl.when(pl.col("_last")).then(0.0).otherwise(pl.col("t").shift(-1) - pl.col("t")),
    )


def _segment_attempts_and_episodes(df: pl.DataFrame) -> pl.DataFrame:
    """Phase 9: number attempts (``att``: from a start-up or first productive state after an inactive one) and
    loss episodes (``ep``: from detection/hang/post-failure after a non-episode state, or a job-ending kill)
    within each job, and give every (job, attempt) and (job, episode) segment a global increasing id
    (``_aseg``, ``_eseg``; ``_gfirst``/``_glast`` bound the attempt segments)."""
    st, prev_st = pl.col("st"), pl.col("prev_st")
    df = df.with_columns(
        att_start=_in(st, PRE_EXECUTION + [State.PRODUCTIVE]) & (~_in(prev_st, ACTIVE)).fill_null(True),
        ep_start=(_in(st, [State.DETECTION, State.HANG, State.POST_FAILURE]) & (~_in(prev_st, EPISODE)).fill_null(True))
        | pl.col("ep_end"),
    ).drop("prev_st")
    return df.with_columns(
        att=seg_cumsum(pl.col("att_start").cast(pl.UInt32), pl.col("_first")),
        ep=seg_cumsum(pl.col("ep_start").cast(pl.UInt32), pl.col("_first")),
        # the first row of each (job, attempt) segment, for fills that must not cross attempts
        _gfirst=pl.col("_first") | pl.col("att_start"),
    ).with_columns(
        _glast=pl.col("_gfirst").shift(-1).fill_null(True),
        # global ids of the (job, attempt) and (job, episode) segments: increasing, so group-bys on them are
        # sorted group-bys and segment-level values reach every row by a gather (no join)
        _aseg=(pl.col("_gfirst").cast(pl.UInt32).cum_sum() - 1).set_sorted(),
        _eseg=((pl.col("_first") | pl.col("ep_start")).cast(pl.UInt32).cum_sum() - 1).set_sorted(),
    )


def _attempts(df: pl.DataFrame) -> pl.DataFrame:
    """Phase 10: one row per attempt (``_aseg, jid, att, last_ckpt, first_prod, ep_at_start, caused``): its last
    effective checkpoint, its first productive time, and whether a loss episode caused it (``caused``)."""
    ckpt_eff = (is_ev(EventType.CHECKPOINT_SAVED) & (pl.col("ps") == State.PRODUCTIVE)
                & (pl.col("pseudo") == RowKind.REAL))
    return df.lazy().filter(pl.col("att") > 0).group_by("_aseg").agg(
        jid=pl.col("jid").first(),
        att=pl.col("att").first(),
        last_ckpt=pl.col("t").filter(ckpt_eff).max(),
        first_prod=pl.col("t").filter(pl.col("st") == State.PRODUCTIVE).min(),
        ep_at_start=pl.col("ep").first(),
    ).sort("_aseg").with_columns(
        caused=(pl.col("ep_at_start") > pl.when(pl.col("jid") == pl.col("jid").shift(1))
                .then(pl.col("ep_at_start").shift(1)).otherwise(0)),
    ).collect()


def _episode_attribution(lz: pl.LazyFrame, attrs: pl.DataFrame) -> pl.DataFrame:
    """Per episode segment (``_eseg``): mode, category, node, cause (a diagnosis first, latest first; then the
    failure rows in time order), the default mode of its first failure row (``kind``) and ``has_diag``."""
    st = pl.col("st")
    is_diag = is_ev(EventType.DIAGNOSED) & (st == State.RECOVERY)
    cand = is_diag | (is_ev(EventType.FAILURE, EventType.HANG_DETECTED, EventType.KILLED, EventType.FINISHED)
                      & (st != State.RELEASED)) | pl.col("ep_end") | (pl.col("pseudo") == RowKind.ONSET)
    cands = lz.filter((pl.col("ep") > 0) & cand & _in("st", EPISODE + [State.RELEASED])).select(
        "_eseg", "ev", "_rid", "t", "pseudo",
        prio=pl.when(is_diag).then(0).otherwise(1),
        order=pl.when(is_diag).then(-pl.col("t")).otherwise(pl.col("t")),
        is_diag=is_diag,
    ).collect().join(attrs, on="_rid", how="left", maintain_order="left").sort(["_eseg", "prio", "order"])
    kind_default = (
        pl.when(is_ev(EventType.HANG_DETECTED)).then(pl.lit(FailureMode.FAIL_HANG.value))
        .when(is_ev(EventType.KILLED)).then(pl.lit(KILLED))
        .otherwise(pl.lit(FailureMode.FAIL_STOP.value))
    )
    return cands.with_columns(pl.col("_eseg").set_sorted()).group_by("_eseg").agg(
        mode=pl.col("mode").drop_nulls().first(),
        category=pl.col("category").drop_nulls().first(),
        node=pl.col("node").drop_nulls().first(),
        cause=pl.col("cause").drop_nulls().first(),
        kind=kind_default.filter(pl.col("prio") == 1).first(),
        has_diag=pl.col("is_diag").any(),
    )


def _episodes(df: pl.DataFrame, attempts: pl.DataFrame, attrs: pl.DataFrame, job_map: pl.DataFrame,
              issues: list[Issue]) -> pl.DataFrame:
    """Phase 11: one row per loss episode, in ``_eseg`` order: ``jid, ep, _eseg, onset_t, att_e``, its
    attribution (:func:`_episode_attribution`, defaults filled), ``rollback``, ``ended_ok`` and

    * ``resume_t``: the time the work lost to it starts (the restart's ``rollback_time``, clamped to the onset;
      else the failed attempt's last checkpoint, its first productive time, or the onset); +inf when the job
      then finished successfully without a restart (nothing is lost);
    * ``resume_min_later``: the smallest ``resume_t`` of this and the job's later episodes.

    Warnings ``failure_then_success`` and ``rollback_after_onset``.
    """
    lz = df.lazy()
    ep_attr = _episode_attribution(lz, attrs)
    starts = lz.filter(pl.col("ep_start")).select("jid", "ep", "_eseg", onset_t="t", att_e="att").collect()
    rollback = lz.filter(is_ev(EventType.RESTART) & (pl.col("ep") > 0)).group_by("_eseg").agg(
        rollback=pl.col("rollback_time").drop_nulls().first()).collect()
    # how each episode ended: the first row after it that is not in an episode state; a successful finish
    # there (no restart) means the job kept its progress, so no work is lost
    ended_ok = lz.filter((pl.col("ep") > 0) & ~_in("st", EPISODE) & ~pl.col("ep_start")).group_by("_eseg").agg(
        ended_ok=(pl.col("ev").first() == EV_CODE[EventType.FINISHED]) & pl.col("_ok").first().fill_null(False)
    ).collect()
    killed = pl.col("mode") == KILLED
    episodes = (
        starts.join(ep_attr, on="_eseg", how="left")
        .join(rollback, on="_eseg", how="left")
        .join(ended_ok, on="_eseg", how="left")
        .join(attempts.select("jid", "att", "last_ckpt", "first_prod"), left_on=["jid", "att_e"],
              right_on=["jid", "att"], how="left")
        .with_columns(
            has_diag=pl.col("has_diag").fill_null(False),
            mode=pl.coalesce(pl.col("mode"), pl.col("kind"), pl.lit(FailureMode.FAIL_STOP.value)),
        )
        .with_columns(
            category=pl.coalesce(pl.col("category"),
                                 pl.when(killed).then(pl.lit(NO_FAILURE)).otherwise(pl.lit("unknown"))),
            node=pl.coalesce(pl.col("node"), pl.when(killed).then(pl.lit(NO_FAILURE)).otherwise(pl.lit(UNKNOWN_NODE))),
            cause=pl.col("cause").fill_null(""),
            resume_t=pl.when(pl.col("ended_ok").fill_null(False)).then(pl.lit(float("inf")))
            .when(pl.col("rollback").is_not_null())
            .then(pl.min_horizontal(pl.col("rollback"), pl.col("onset_t")))
            .otherwise(pl.coalesce(pl.col("last_ckpt"), pl.col("first_prod"), pl.col("onset_t"))),
        )
        .sort("_eseg")
        .with_columns(resume_min_later=pl.col("resume_t").cum_min(reverse=True).over("jid"))
    )
    n_ok = int(episodes.get_column("ended_ok").fill_null(False).sum())
    if n_ok:
        ex = episodes.filter(pl.col("ended_ok").fill_null(False)).select("jid").head(5).join(job_map, on="jid")
        issues.append(Issue(kind="warning", code="failure_then_success",
                            message="failure/hang followed by a successful finish without a restart: the job kept its "
                                    "progress, so no work is counted as lost; detection to the end counts as recovery",
                            count=n_ok, examples=ex.get_column("job").to_list()))
    bad_rb = episodes.filter(pl.col("rollback").is_not_null() & (pl.col("rollback") > pl.col("onset_t")))
    if bad_rb.height:
        issues.append(Issue(kind="warning", code="rollback_after_onset",
                            message="restart.rollback_time after the failure onset: clamped to the onset",
                            count=bad_rb.height))
    return episodes


def _lost_work(df: pl.DataFrame, episodes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Phase 12: productive rows covered by a later episode's window ``[resume_t, onset)`` are lost work.

    Adds to every row its episode segment's ``has_diag`` and ``lost``; returns ``(df, lost_rows)`` with
    ``lost_rows``: ``_i`` (row number) and ``ep_lost``, the episode the loss is attributed to (the next
    episode if its window covers the row, else the job's episode with the smallest ``resume_t``).
    """
    # per (job, episode) segment: the next segment is the job's next episode unless it starts a new job
    n_eseg = int(df.get_column("_eseg")[-1]) + 1
    seg_ep = _per_segment(n_eseg, episodes.get_column("_eseg"),
                          episodes.select(next_resume_t="resume_t", next_resume_min="resume_min_later",
                                          has_diag="has_diag"))
    new_job_next = df.lazy().filter(pl.col("_first") | pl.col("ep_start")).select(
        nj=pl.col("_first").shift(-1).fill_null(True)).collect().get_column("nj")
    seg_next_ep = seg_ep.select(
        [pl.when(new_job_next).then(None).otherwise(pl.col(c).shift(-1)).alias(c)
         for c in ("next_resume_t", "next_resume_min")])
    eseg = df.get_column("_eseg")
    df = df.with_columns([c.gather(eseg) for c in seg_next_ep.get_columns()])
    df = df.with_columns(lost=(pl.col("st") == State.PRODUCTIVE) & (pl.col("next_resume_min") <= pl.col("t") + 1e-9)
                         .fill_null(False))
    ep_by_resume = episodes.group_by(["jid", "resume_t"]).agg(ep_min=pl.col("ep").min())
    lost_rows = df.lazy().with_row_index("_i").filter(pl.col("lost")).select(
        "_i", "jid", "ep", "t", "next_resume_t", "next_resume_min").collect().join(
        ep_by_resume, left_on=["jid", "next_resume_min"], right_on=["jid", "resume_t"], how="left",
        maintain_order="left").select(
        "_i", ep_lost=pl.when(pl.col("next_resume_t") <= pl.col("t") + 1e-9).then(pl.col("ep") + 1)
        .otherwise(pl.col("ep_min")))
    df = df.with_columns(seg_ep.get_column("has_diag").gather(eseg))
    return df, lost_rows


def _throughput_ratio(df: pl.DataFrame, job_map: pl.DataFrame, slow_tolerance: float, expected_quantile: float,
                      issues: list[Issue]) -> pl.DataFrame:
    """Phase 13: ``r``, the throughput ratio in force over each interval, and ``slow_src`` (the ``_rid`` of the
    slow_detected/slow_resolved row in force, -1 if none).

    The expected rate is the job's first ``expected_throughput`` (sorted order), else the ``expected_quantile``
    of its progress samples (assumption ``expected_throughput_quantile``). An interval takes the next progress
    sample's ratio in its attempt, else the last sample or slow event before it, else 1; ratios at or above
    ``1 - slow_tolerance`` count as 1.
    """
    prog = is_ev(EventType.PROGRESS) & (pl.col("pseudo") == RowKind.REAL)
    # the job's first expected_throughput (sorted order); the quantile of its samples only where it has none
    per_job = df.lazy().filter(pl.col("expected_throughput").is_not_null()).group_by("_k").agg(
        exp_tp=pl.col("expected_throughput").first()).collect()
    q_src = df.lazy().filter(pl.col("throughput").is_not_null() & prog & ~_in("ps", AFTER_FAILURE + [State.RELEASED])).select(
        "_k", "throughput").join(per_job.lazy(), on="_k", how="anti")
    q = q_src.group_by("_k").agg(q_tp=pl.col("throughput").quantile(expected_quantile, "linear")).collect()
    per_job = per_job.join(q, on="_k", how="full", coalesce=True).sort("_k")  # job order: stable examples
    per_job = per_job.with_columns(jid=job_map.get_column("jid").gather(per_job.get_column("_k")))
    used_q = per_job.filter(pl.col("exp_tp").is_null() & pl.col("q_tp").is_not_null())
    if used_q.height:
        issues.append(Issue(kind="assumption", code="expected_throughput_quantile",
                            message=f"no expected_throughput for the job: the {expected_quantile:.0%} quantile of its "
                                    "observed throughput samples is used as the expected rate", count=used_q.height,
                            examples=used_q.select("jid").head(5).join(job_map, on="jid", how="left", maintain_order="left")
                            .get_column("job").to_list()))
    exp_job = _per_segment(job_map.height, per_job.get_column("_k"),
                           per_job.select(exp=pl.coalesce(pl.col("exp_tp"), pl.col("q_tp"))))
    df = df.with_columns(exp_job.get_column("exp").gather(df.get_column("_k")))
    is_prog = is_ev(EventType.PROGRESS) & ~_in("ps", AFTER_FAILURE + [State.RELEASED])
    raw_r = pl.when(pl.col("ratio").is_not_null()).then(pl.col("ratio")).otherwise(pl.col("throughput") / pl.col("exp"))
    r_sample = pl.when(is_prog).then(raw_r.clip(0.0, 1.0))
    is_slow_ev = is_ev(EventType.SLOW_DETECTED, EventType.SLOW_RESOLVED)
    slow_r = (
        pl.when(is_ev(EventType.SLOW_DETECTED))
        .then(pl.coalesce(pl.col("ratio"), 1.0 / pl.col("slowdown")).clip(0.0, 1.0))
        .when(is_ev(EventType.SLOW_RESOLVED)).then(pl.lit(1.0))
    )
    gf, gl, nan = pl.col("_gfirst"), pl.col("_glast"), float("nan")
    df = df.with_columns(_rs=r_sample, _rf=pl.coalesce(r_sample, slow_r))
    df = df.with_columns(
        r_next=seg_next(pl.col("_rs"), gl, nan).fill_nan(None),
        r_prev=seg_ffill(pl.col("_rf"), gf, nan).fill_nan(None),
        # the slow_detected/slow_resolved row in force (its _rid), for the slow loss's attribution
        slow_src=seg_ffill(pl.when(is_slow_ev).then(pl.col("_rid")), gf, -1.0),
    )
    tol = 1.0 - slow_tolerance
    r = pl.coalesce(pl.col("r_next"), pl.col("r_prev"), pl.lit(1.0))
    return df.with_columns(r=pl.when(r >= tol).then(1.0).otherwise(r))


def _bucket_rows(df: pl.DataFrame, attempts: pl.DataFrame, lost_rows: pl.DataFrame) -> pl.DataFrame:
    """Phase 14: the bucket of every interval (``bucket`` code) and the episode it is attributed to
    (``attr_ep``: start-up of an attempt a failure caused, the episode's own time, lost work); keeps the
    intervals with a bucket and a positive duration (``jid, _k, t, st, dur, r, gpus_f, attr_ep, slow_src,
    bucket``)."""
    st = pl.col("st")
    n_aseg = int(df.get_column("_aseg")[-1]) + 1
    seg_att = _per_segment(n_aseg, attempts.get_column("_aseg"), attempts.select("caused", "ep_at_start"))
    aseg = df.get_column("_aseg")
    df = df.with_columns([c.gather(aseg) for c in seg_att.get_columns()])
    t_alloc = pl.when(_in("st", ALLOCATED)).then(pl.col("t"))
    df = df.with_columns(
        future_alloc=(seg_next(t_alloc, pl.col("_last"), float("-inf")) > float("-inf")).fill_null(False),
    )
    ep_lost = pl.repeat(None, df.height, dtype=pl.UInt32, eager=True).alias("ep_lost")
    if lost_rows.height:
        ep_lost = ep_lost.scatter(lost_rows.get_column("_i"), lost_rows.get_column("ep_lost").cast(pl.UInt32))
    df = df.with_columns(ep_lost)
    attr_ep = (
        pl.when(_in("st", PRE_EXECUTION) & pl.col("caused").fill_null(False)).then(pl.col("ep_at_start"))
        .when(_in("st", EPISODE)).then(pl.col("ep"))
        .when(pl.col("lost")).then(pl.col("ep_lost"))
    )
    df = df.with_columns(attr_ep=attr_ep)
    def code(b: Bucket) -> pl.Expr:
        return pl.lit(BUCKET_CODE[b])

    bucket = (
        pl.when(st == State.PRODUCTIVE).then(pl.when(pl.col("lost")).then(code(Bucket.LOST_WORK))
                                             .otherwise(code(Bucket.PRODUCTIVE)))
        .when(st == State.POST_FAILURE).then(pl.when(pl.col("has_diag").fill_null(False)).then(code(Bucket.DIAGNOSIS))
                                             .otherwise(code(Bucket.RECOVERY)))
        .when(st == State.RELEASED).then(pl.when(pl.col("future_alloc")).then(code(Bucket.REQUEUE)))
        .otherwise(pl.col("st").replace_strict(_STATE_BUCKET_CODE, default=None, return_dtype=pl.Int8))
    ).cast(pl.Int8)
    keep = ["jid", "_k", "t", "st", "dur", "r", "gpus_f", "attr_ep", "slow_src"]
    return df.lazy().select(*keep, bucket=bucket).filter(pl.col("bucket").is_not_null() & (pl.col("dur") > 0)).collect()


def _parts(df: pl.DataFrame) -> pl.DataFrame:
    """Phase 15: interval parts with their ``phase``: productive intervals split into productive ``dur x r``
    and slow ``dur x (1 - r)``; ``wall_s`` seconds and ``gpu_s`` GPU-seconds."""
    phase = (
        pl.when(_in("st", PRE_EXECUTION)).then(pl.when(pl.col("attr_ep").is_not_null()).then(pl.lit(PHASE_CODE[Phase.REINIT]))
                                     .otherwise(pl.lit(PHASE_CODE[Phase.STARTUP])))
        .when(_in("st", [State.DETECTION, State.HANG])).then(pl.lit(PHASE_CODE[Phase.DETECTION]))
        .when(pl.col("bucket") == BUCKET_CODE[Bucket.DIAGNOSIS]).then(pl.lit(PHASE_CODE[Phase.DIAGNOSIS]))
        .when(pl.col("bucket") == BUCKET_CODE[Bucket.RECOVERY]).then(pl.lit(PHASE_CODE[Phase.RECOVERY]))
        .when(pl.col("bucket") == BUCKET_CODE[Bucket.LOST_WORK]).then(pl.lit(PHASE_CODE[Phase.LOST_WORK]))
        .when(pl.col("bucket") == BUCKET_CODE[Bucket.CKPT_STALL]).then(pl.lit(PHASE_CODE[Phase.CHECKPOINT]))
        .when(pl.col("bucket") == BUCKET_CODE[Bucket.PRODUCTIVE]).then(pl.lit(PHASE_CODE[Phase.PRODUCTIVE]))
        .otherwise(pl.lit(PHASE_CODE[Phase.QUEUE]))
    ).cast(pl.Int8)
    g = pl.col("gpus_f")
    main = df.select("jid", "_k", "t", "attr_ep", bucket="bucket", phase=phase,
                     wall_s=pl.when(pl.col("bucket") == BUCKET_CODE[Bucket.PRODUCTIVE]).then(pl.col("dur") * pl.col("r"))
                     .otherwise(pl.col("dur")), gpus=g, slow_src=pl.lit(None, pl.Float64))
    slow = df.filter((pl.col("bucket") == BUCKET_CODE[Bucket.PRODUCTIVE]) & (pl.col("r") < 1.0)).select(
        "jid", "_k", "t", attr_ep=pl.lit(None, pl.UInt32), bucket=pl.lit(BUCKET_CODE[Bucket.SLOW], pl.Int8),
        phase=pl.lit(PHASE_CODE[Phase.SLOW], pl.Int8), wall_s=pl.col("dur") * (1.0 - pl.col("r")), gpus=g,
        slow_src=pl.col("slow_src"))
    return pl.concat([main, slow], how="vertical_relaxed").with_columns(gpu_s=pl.col("wall_s") * pl.col("gpus"))


def _attribute(parts: pl.DataFrame, episodes: pl.DataFrame, attrs: pl.DataFrame) -> pl.DataFrame:
    """Phase 16: replace the numeric attribution keys of ``parts`` by names: bucket, phase (Enum), mode, category,
    node, cause (Categorical; ``none`` where no failure caused the time)."""
    cat = pl.Categorical()
    base = ["jid", pl.col("_k").alias("job_idx"), "t", "wall_s", "gpu_s",
            pl.col("bucket").replace_strict(BUCKET_OF_CODE, return_dtype=BUCKET_ENUM),
            pl.col("phase").replace_strict(PHASE_OF_CODE, return_dtype=PHASE_ENUM)]
    is_slow = pl.col("bucket") == BUCKET_CODE[Bucket.SLOW]
    plain = parts.filter(pl.col("attr_ep").is_null() & ~is_slow).select(
        *base, mode=pl.lit(NO_FAILURE, cat), category=pl.lit(NO_FAILURE, cat), node=pl.lit(NO_FAILURE, cat),
        cause=pl.lit("", cat))
    ep = episodes.select("jid", attr_ep="ep", mode="mode", category="category", node="node", cause="cause")
    failed = parts.filter(pl.col("attr_ep").is_not_null() & ~is_slow).join(
        ep, on=["jid", "attr_ep"], how="left").select(
        *base, *[pl.col(c).fill_null(NO_FAILURE if c != "cause" else "").cast(cat) for c in
                 ("mode", "category", "node", "cause")])
    sl = attrs.select(slow_src=pl.col("_rid"), category="category", node="node", cause="cause")
    slow = parts.filter(is_slow).join(sl, on="slow_src", how="left").select(
        *base, mode=pl.lit(FailureMode.FAIL_SLOW.value, cat), category=pl.col("category").fill_null("unknown").cast(cat),
        node=pl.col("node").fill_null(UNKNOWN_NODE).cast(cat), cause=pl.col("cause").fill_null("").cast(cat))
    return pl.concat([plain, failed, slow], how="vertical")


def _insert_sorted(real: pl.DataFrame, pseudo: pl.DataFrame, t_sorted: pl.Series, n_keys: int) -> pl.DataFrame:
    """Merge pseudo rows into real rows sorted by ``_key`` (see :func:`_sort_events`) without sorting again.

    A pseudo row at time ``t`` of job index ``k`` gets ``k x n_keys + r + 0.1 + 0.8 f``, where ``r`` is the number
    of events (all jobs) at or before ``t`` and ``f`` its position between the neighbouring event times: it
    lands after its job's events at or before ``t`` and before the later ones. Implicit failures carry
    their key already (just after the previous event).
    """
    if pseudo.height == 0:
        return real.drop("_key")
    if "_anchor" not in pseudo.columns:
        pseudo = pseudo.with_columns(_anchor=pl.lit(None, pl.Float64))
    n_t = t_sorted.len()
    # numpy's binary search narrows from the previous answer when the needles ascend: search them in order
    tp = pseudo.get_column("t").to_numpy()
    order = np.argsort(tp, kind="stable")
    pos = np.empty(tp.size, dtype=np.int64)
    pos[order] = np.searchsorted(t_sorted.to_numpy(), tp[order], side="right")
    r = pl.Series("_r", pos)
    pseudo = pseudo.with_columns(_r=r).with_columns(
        _lo=pl.lit(t_sorted).gather((pl.col("_r") - 1).clip(0, n_t - 1)),
        _hi=pl.lit(t_sorted).gather(pl.col("_r").clip(0, n_t - 1)),
    )
    frac = pl.when(pl.col("_hi") > pl.col("_lo")).then(
        ((pl.col("t") - pl.col("_lo")) / (pl.col("_hi") - pl.col("_lo"))).clip(0.0, 1.0)).otherwise(0.5)
    key = pl.coalesce(pl.col("_anchor"), pl.col("_k").cast(pl.Float64) * float(n_keys)
                      + pl.col("_r").cast(pl.Float64) + 0.1 + 0.8 * frac)
    pseudo = pseudo.with_columns(_key=key).sort("_key")
    cols = real.columns
    pseudo = pseudo.select([pl.col(c).cast(real.schema[c]) if c in pseudo.columns else pl.lit(None, real.schema[c]).alias(c)
                            for c in cols])
    return real.merge_sorted(pseudo, key="_key").drop("_key")


WEEK_S = 7 * 86400.0
_MONDAY_OFFSET = 3 * 86400.0  # 1970-01-01 was a Thursday; ISO weeks start on Monday


def _split_weeks(parts: pl.DataFrame) -> pl.DataFrame:
    """Split parts at UTC Monday 00:00 boundaries (proportionally) and add ``week`` as ``YYYY-Www``."""
    p = parts.with_columns(
        w0=((pl.col("t") + _MONDAY_OFFSET) / WEEK_S).floor().cast(pl.Int64),
        w1=((pl.col("t") + pl.col("wall_s").clip(0.0) + _MONDAY_OFFSET) / WEEK_S).ceil().cast(pl.Int64),
    ).with_columns(frac_den=pl.col("wall_s").clip(1e-12))
    p = p.with_columns(w=pl.int_ranges(pl.col("w0"), pl.max_horizontal(pl.col("w1"), pl.col("w0") + 1))).explode("w")
    ws = pl.col("w").cast(pl.Float64) * WEEK_S - _MONDAY_OFFSET
    piece = (pl.min_horizontal(pl.col("t") + pl.col("wall_s"), ws + WEEK_S) - pl.max_horizontal(pl.col("t"), ws)).clip(0.0)
    p = p.with_columns(share=pl.when(pl.col("wall_s") > 0).then(piece / pl.col("frac_den")).otherwise(1.0))
    p = p.filter(pl.col("share") > 0).with_columns(
        wall_s=pl.col("wall_s") * pl.col("share"), gpu_s=pl.col("gpu_s") * pl.col("share"),
        week=pl.from_epoch((ws + 86400.0 * 3.5).cast(pl.Int64), time_unit="s").dt.strftime("%G-W%V"),
    )
    return p.drop(["w0", "w1", "w", "frac_den", "share"])


def df_jobs(job_map: pl.DataFrame, times: pl.DataFrame, episodes: pl.DataFrame,
            attempts: pl.DataFrame) -> pl.DataFrame:
    """Per-job identity and counts: ``jid, job, gpus (last), attempts, failures, first_time, last_time``, in the
    row order of ``job_map`` (the job index)."""
    base = job_map
    att = attempts.group_by("jid").agg(attempts=pl.len().cast(pl.UInt32))
    eps = episodes.group_by("jid").agg(failures=pl.len().cast(pl.UInt32))
    out = (base.join(times, on="jid", how="left", maintain_order="left")
           .join(att, on="jid", how="left", maintain_order="left")
           .join(eps, on="jid", how="left", maintain_order="left")
           .with_columns(attempts=pl.col("attempts").fill_null(0), failures=pl.col("failures").fill_null(0),
                         gpus=pl.col("gpus").fill_null(1.0)))
    return out


# ---------------------------------------------------------------------------------------------------
# aggregation
# ---------------------------------------------------------------------------------------------------

ALLOC_BUCKET_NAMES = [b.value for b, t in BUCKET_TERM.items() if t.value != "queue"]


def bucket_totals_frame(parts: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Wide table: one row per ``keys`` value, one column per bucket in GPU-seconds (``<bucket>``) and
    wall seconds (``wall_<bucket>``), with missing buckets as 0."""
    all_b = [b.value for b in Bucket]
    code = pl.col("bucket").cast(pl.String) if keys else pl.col("bucket")
    aggs = [pl.col("gpu_s").filter(code == b).sum().alias(b) for b in all_b] + [
        pl.col("wall_s").filter(code == b).sum().alias("wall_" + b) for b in all_b]
    if keys:
        # one pass: the bucket as a small integer, then conditional sums per key
        p = parts.lazy().with_columns(_b=pl.col("bucket").cast(pl.String).replace_strict(
            {b: i for i, b in enumerate(all_b)}, return_dtype=pl.Int8))
        aggs = [pl.col("gpu_s").filter(pl.col("_b") == i).sum().alias(b) for i, b in enumerate(all_b)] + [
            pl.col("wall_s").filter(pl.col("_b") == i).sum().alias("wall_" + b) for i, b in enumerate(all_b)]
        wide = p.group_by(keys).agg(aggs).collect()
    else:
        wide = parts.lazy().select(aggs).collect()
    wide = wide.with_columns([pl.col(b).fill_null(0.0) for b in all_b] + [pl.col("wall_" + b).fill_null(0.0) for b in all_b])
    return _with_ratios(wide)


def job_totals_frame(ledger: Ledger) -> pl.DataFrame:
    """:func:`bucket_totals_frame` per job, for every job of ``ledger.jobs`` in its row order (``jid`` first; jobs
    without parts have 0 in every bucket), in GPU-seconds and wall seconds. One weighted ``bincount`` over
    ``job_idx x buckets`` instead of a hash group-by with a filtered sum per bucket."""
    all_b = [b.value for b in Bucket]
    n_jobs, n_b = ledger.jobs.height, len(all_b)
    parts = ledger.parts
    cell = (parts.get_column("job_idx").cast(pl.Int64) * n_b
            + parts.get_column("bucket").cast(BUCKET_ENUM).to_physical().cast(pl.Int64)).to_numpy()
    cols: dict[str, pl.Series] = {"jid": ledger.jobs.get_column("jid")}
    for name, prefix in (("gpu_s", ""), ("wall_s", "wall_")):
        m = np.bincount(cell, weights=parts.get_column(name).to_numpy(), minlength=n_jobs * n_b).reshape(n_jobs, n_b)
        for i, b in enumerate(all_b):
            cols[prefix + b] = pl.Series(prefix + b, m[:, i], dtype=pl.Float64)
    return _with_ratios(pl.DataFrame(cols))


def _with_ratios(wide: pl.DataFrame) -> pl.DataFrame:
    """Add ``allocated``, ``wall_allocated``, ``etpr``, ``ettr``, ``ettr_wall`` to a wide bucket table."""
    alloc = pl.sum_horizontal([pl.col(b) for b in ALLOC_BUCKET_NAMES])
    alloc_w = pl.sum_horizontal([pl.col("wall_" + b) for b in ALLOC_BUCKET_NAMES])
    wide = wide.with_columns(allocated=alloc, wall_allocated=alloc_w)
    wide = wide.with_columns(
        etpr=pl.when(pl.col("allocated") > 0).then(pl.col("productive") / pl.col("allocated")),
        ettr=pl.when(pl.col("allocated") + pl.col("requeue") > 0).then(
            (pl.col("productive") + pl.col("slow")) / (pl.col("allocated") + pl.col("requeue"))),
        ettr_wall=pl.when(pl.col("wall_allocated") + pl.col("wall_requeue") > 0).then(
            (pl.col("wall_productive") + pl.col("wall_slow")) / (pl.col("wall_allocated") + pl.col("wall_requeue"))),
    )
    return wide


def safe_ratio(num: float, den: float) -> float | None:
    """``num / den`` or None when the denominator is not positive (or either is not finite)."""
    if den <= 0 or not math.isfinite(den) or not math.isfinite(num):
        return None
    return num / den
