"""Read lifecycle events from any registered source, validate them column-wise, and normalise them.

``load_events(path, source="auto")`` picks the source (:mod:`diag_service.etpr.sources`: ``events``, ``lab``,
``glm130b``, ``philly``, ``stepfun``; auto-detected from the path unless named), which returns raw rows;
:func:`normalize_events` validates them into the canonical columns. Every problem with the input becomes an
:class:`~diag_service.etpr.schema.Issue`, never an exception, except a path that does not exist or a format
we cannot read at all (``EtprInputError``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from diag_service.domain import Category, FailureMode
from diag_service.etpr.accounting import job_key
from diag_service.etpr.schema import COLUMN_ALIASES, EVENT_COLUMNS, EventType, Issue
from diag_service.etpr.sources import detect_source, get_source, source_names
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, rows_to_frame
from diag_service.etpr.sources.events import read_event_file

_FLOAT_COLS = [c for c, t in EVENT_COLUMNS.items() if t == "f64"]
_STR_COLS = [c for c, t in EVENT_COLUMNS.items() if t == "str"]
_VALID_EVENTS = {e.value for e in EventType}
_VALID_MODES = {m.value for m in FailureMode}
_VALID_CATS = {c.value for c in Category}
EVENT_ENUM = pl.Enum([e.value for e in EventType])

#: ``auto`` and the registered source names (the ``--format`` values).
FORMATS = source_names()


# ---------------------------------------------------------------------------------------------------
# normalisation and validation (column-wise; the same rules as schema.EtprEvent)
# ---------------------------------------------------------------------------------------------------

def _time_expr(dtype: pl.DataType) -> pl.Expr:
    """Unix seconds from numbers, numeric strings or ISO-8601 strings (naive = UTC)."""
    c = pl.col("time")
    if dtype == pl.String:
        num = c.str.strip_chars().cast(pl.Float64, strict=False)
        iso = c.str.to_datetime(strict=False, time_zone="UTC", time_unit="us").dt.epoch("us").cast(pl.Float64) / 1e6
        return pl.coalesce(num, iso)
    if isinstance(dtype, pl.Datetime):
        return c.dt.epoch("us").cast(pl.Float64) / 1e6
    return c.cast(pl.Float64, strict=False)


def normalize_events(raw: pl.DataFrame, issues: list[Issue] | None = None) -> tuple[pl.DataFrame, list[Issue]]:
    """Validate and normalise raw event rows into the canonical columns plus ``seq`` (input order).

    Rows without a job, a known event type or a finite time are dropped; invalid payload values become
    null; exact duplicates are dropped; times that go backwards within a job (input order) are counted.
    Each of these is reported as an :class:`Issue`. Returns ``(events, issues)``.
    """
    issues = [] if issues is None else issues
    df = raw
    # a known column holding objects or lists (a JSONL line with {"gpus": {...}}, a Parquet struct) has no
    # value of its type: null, as the line-by-line reader makes it (casting it aborts polars itself)
    nested = [c for c, dt in df.schema.items()
              if (c in EVENT_COLUMNS or c in COLUMN_ALIASES) and (dt.is_nested() or dt == pl.Object)]
    if nested:
        add_issue(issues, "warning", "nested_value", "column holds objects or lists, not values; taken as empty",
               len(nested), nested)
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in nested)
    renames: dict[str, str] = {}
    for a, c in COLUMN_ALIASES.items():  # the first alias present names the column; later ones fill its gaps below
        if a in df.columns and c not in df.columns and c not in renames.values():
            renames[a] = c
    df = df.rename(renames)
    for a, c in COLUMN_ALIASES.items():  # both present: the canonical value wins, the alias fills its gaps
        if a in df.columns and c in df.columns:
            common = pl.String if pl.String in (df.schema[a], df.schema[c]) else pl.Float64
            df = df.with_columns(pl.coalesce(pl.col(c).cast(common, strict=False),
                                             pl.col(a).cast(common, strict=False)).alias(c)).drop(a)
    if "seq" not in df.columns:
        df = df.with_row_index("seq")
    for c, t in EVENT_COLUMNS.items():
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, dtype=pl.Float64 if t == "f64" else pl.String).alias(c))
    time_dtype = df.schema["time"]
    casts = [] if time_dtype == pl.Float64 else [_time_expr(time_dtype).alias("time")]
    for c in _FLOAT_COLS:
        if c == "time":
            continue
        dt = df.schema[c]
        if dt == pl.Float64:
            continue
        if dt == pl.String:
            casts.append(pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).alias(c))
        elif dt.is_numeric() or dt == pl.Null or dt == pl.Boolean:
            casts.append(pl.col(c).cast(pl.Float64, strict=False).alias(c))
        else:
            casts.append(pl.lit(None, pl.Float64).alias(c))
            add_issue(issues, "warning", f"bad_type_{c}", f"column {c} has type {dt}; ignored", df.height)
    for c in _STR_COLS:
        dt = df.schema[c]
        if dt == pl.String:
            if c in ("mode", "category", "event"):
                continue  # normalised below
            casts.append(pl.col(c))
        elif dt.is_numeric() or dt == pl.Null or dt == pl.Boolean:
            casts.append(pl.col(c).cast(pl.String).alias(c))
        else:
            casts.append(pl.col(c).cast(pl.String, strict=False).alias(c))
    df = df.with_columns(casts).select(["seq", *EVENT_COLUMNS])
    # event type as an Enum (codes in EventType order); spelling variants are fixed only where needed
    ev = df.get_column("event").cast(pl.String)
    coded = ev.cast(EVENT_ENUM, strict=False)
    if coded.null_count() > ev.null_count():
        coded = ev.str.strip_chars().str.to_lowercase().cast(EVENT_ENUM, strict=False)
    df = df.with_columns(event_raw=ev, event=coded, job=pl.when(pl.col("job").str.len_chars() > 0).then(pl.col("job")))
    for c, valid in (("mode", _VALID_MODES), ("category", _VALID_CATS)):
        col = df.get_column(c).cast(pl.String)
        # valid values are already in canonical form: normalise only if some value is not
        if col.null_count() < col.len() and bool((col.is_not_null() & ~col.is_in(list(valid))).any()):
            df = df.with_columns(col.str.strip_chars().str.to_lowercase().str.replace_all("-", "_").alias(c))
        else:
            df = df.with_columns(col.alias(c))
    # finite numbers only
    nonfinite = [c for c in _FLOAT_COLS if df.get_column(c).is_infinite().any() or df.get_column(c).is_nan().any()]
    if nonfinite:
        df = df.with_columns([pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in nonfinite])

    n0 = df.height
    lz = df.lazy()
    counts = lz.select(
        no_job=pl.col("job").is_null().sum(),
        bad_ev=(pl.col("job").is_not_null() & pl.col("event").is_null()).sum(),
        bad_t=(pl.col("job").is_not_null() & pl.col("event").is_not_null() & pl.col("time").is_null()).sum(),
    ).collect().row(0, named=True)
    if counts["no_job"]:
        ex = lz.filter(pl.col("job").is_null()).select("seq").head(5).collect().get_column("seq").to_list()
        add_issue(issues, "warning", "missing_job",
                  "event without a job id; dropped (give each event a job field, or the job id with diag etpr --job-id)",
                  counts["no_job"], (f"row {x}" for x in ex))
    if counts["bad_ev"]:
        sel = lz.filter(pl.col("job").is_not_null() & pl.col("event").is_null()).select("job", "event_raw").collect()
        names = sel.get_column("event_raw").fill_null("<missing>").unique().head(5).to_list()
        add_issue(issues, "warning", "unknown_event", f"unknown or missing event type ({', '.join(map(str, names))}); dropped",
               sel.height, sel.get_column("job").unique(maintain_order=True).head(5).to_list())
    if counts["bad_t"]:
        sel = lz.filter(pl.col("job").is_not_null() & pl.col("event").is_not_null() & pl.col("time").is_null()
                        ).select("job").collect()
        add_issue(issues, "warning", "bad_time", "event without a finite time (unix seconds or ISO-8601); dropped",
               sel.height, sel.get_column("job").unique(maintain_order=True).head(5).to_list())
    if counts["no_job"] or counts["bad_ev"] or counts["bad_t"]:
        df = df.filter(pl.col("job").is_not_null() & pl.col("event").is_not_null() & pl.col("time").is_not_null())
    df = df.drop("event_raw")

    # invalid payload values -> null
    checks: list[tuple[str, pl.Expr, str]] = [
        ("gpus", pl.col("gpus") <= 0, "gpus must be >= 1"),
        ("duration", pl.col("duration") < 0, "duration must be >= 0"),
        ("throughput", pl.col("throughput") < 0, "throughput must be >= 0"),
        ("expected_throughput", pl.col("expected_throughput") <= 0, "expected_throughput must be > 0"),
        ("ratio", pl.col("ratio") < 0, "ratio must be >= 0"),
        ("slowdown", pl.col("slowdown") < 1, "slowdown must be >= 1"),
        ("mode", ~pl.col("mode").is_in(list(_VALID_MODES)) & pl.col("mode").is_not_null(),
         f"mode must be one of {sorted(_VALID_MODES)}"),
        ("category", ~pl.col("category").is_in(list(_VALID_CATS)) & pl.col("category").is_not_null(),
         "category must be a diag_service.domain.Category value"),
    ]
    bad_counts = df.lazy().select([bad.fill_null(False).sum().alias(col) for col, bad, _ in checks]).collect().row(
        0, named=True)
    fixes = []
    for col, bad, msg in checks:
        if bad_counts[col]:
            sel = df.lazy().filter(bad.fill_null(False)).select("job", col).collect()
            vals = sel.get_column(col).unique().head(3).to_list()
            add_issue(issues, "warning", f"invalid_{col}", f"{msg} (got {vals}); the value is ignored", sel.height,
                   sel.get_column("job").unique(maintain_order=True).head(5).to_list())
            fixes.append(pl.when(bad.fill_null(False)).then(None).otherwise(pl.col(col)).alias(col))
    if fixes:
        df = df.with_columns(fixes)

    # exact duplicates and out-of-order events are found after the sort, in compute_ledger
    df = df.with_columns(jid=job_key(pl.col("job")))
    if df.height == 0 and n0:
        add_issue(issues, "warning", "no_valid_events", "no valid event left after validation", 1)
    return df, issues



# ---------------------------------------------------------------------------------------------------
# job tables
# ---------------------------------------------------------------------------------------------------

def load_jobs_table(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Job metadata (``--jobs``): columns ``job`` (or ``job_id``), optional ``gpus``, ``expected_throughput``."""
    raw = read_event_file(path, issues)
    raw = raw.rename({a: c for a, c in COLUMN_ALIASES.items() if a in raw.columns and c not in raw.columns})
    if "job" not in raw.columns:
        add_issue(issues, "warning", "jobs_table_no_job", f"{path}: no job/job_id column; the jobs table is ignored", 1)
        return pl.DataFrame(schema={"job": pl.String})
    cols = [pl.col("job").cast(pl.String)]
    for c in ("gpus", "expected_throughput"):
        if c in raw.columns:
            cols.append(pl.col(c).cast(pl.Float64, strict=False).alias(f"{c}_job"))
    return raw.select(cols).unique(subset=["job"], keep="first")


def apply_jobs_table(events: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """Add a job-level ``gpus``/``expected_throughput`` to each job's first event where the events lack them."""
    if jobs.height == 0:
        return events
    ev = events.join(jobs, on="job", how="left")
    first = pl.col("seq") == pl.col("seq").min().over("job")
    out = []
    for c in ("gpus", "expected_throughput"):
        if f"{c}_job" in ev.columns:
            has = pl.col(c).is_not_null().any().over("job")
            out.append(pl.when(first & ~has).then(pl.col(f"{c}_job")).otherwise(pl.col(c)).alias(c))
    ev = ev.with_columns(out) if out else ev
    return ev.select(events.columns)  # jid unchanged: same job ids


# ---------------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------------

def detect_format(path: Path) -> str:
    """The name of the source that auto-detection picks for ``path`` (see :data:`FORMATS`)."""
    return detect_source(path).name


def fill_job_id(raw: pl.DataFrame, job_id: str) -> pl.DataFrame:
    """``raw`` with ``job_id`` as the job of every row that has none (null or empty ``job`` / ``job_id``);
    rows with a job id keep it."""
    present = [c for c in ("job", "job_id") if c in raw.columns]
    ids = [pl.when(pl.col(c).cast(pl.String).str.len_chars() > 0).then(pl.col(c).cast(pl.String)) for c in present]
    filled = raw.with_columns(pl.coalesce(*ids, pl.lit(job_id, pl.String)).alias("job"))
    return filled.drop([c for c in present if c != "job"])


def load_events(path: Path, source: str = "auto", jobs: Path | None = None, use_truth: bool = True, *,
                job_id: str | None = None, fmt: str | None = None) -> tuple[pl.DataFrame, list[Issue]]:
    """Read ``path`` with the registered source named ``source`` (``auto``: detected from the path) and return
    the normalised events and the issues met.

    ``jobs``: a job table (``--jobs``) supplying job-level ``gpus`` / ``expected_throughput``. ``use_truth``:
    lab runs take attribution from ``truth.json``. ``job_id``: the job of events that carry none (a lab run
    takes it instead of its folder name). ``fmt``: the former name of ``source`` (wins when given).
    Raises :class:`EtprInputError` only when nothing can be read (missing path, unknown source, a source that
    cannot read the path at all).
    """
    if not path.exists():
        raise EtprInputError(f"{path}: no such file or folder")
    if job_id is not None and not job_id.strip():
        raise EtprInputError("--job-id must not be empty")
    name = fmt if fmt is not None else source
    src = detect_source(path) if name == "auto" else get_source(name)
    issues: list[Issue] = []
    raw = src.load(path, issues, LoadOptions(use_truth=use_truth, job_id=job_id))
    if job_id is not None:
        raw = fill_job_id(raw, job_id)
    events, issues = normalize_events(raw, issues)
    if jobs is not None:
        events = apply_jobs_table(events, load_jobs_table(jobs, issues))
    return events, issues


__all__ = ["EVENT_ENUM", "FORMATS", "EtprInputError", "apply_jobs_table", "detect_format", "fill_job_id",
           "load_events", "load_jobs_table", "normalize_events", "read_event_file", "rows_to_frame"]
