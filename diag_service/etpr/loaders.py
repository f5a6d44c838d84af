"""Read lifecycle events from every source we know, validate them column-wise, and normalise them.

Sources (``load_events(path, fmt="auto")``):

* ``events``: our JSONL (``.jsonl``, ``.ndjson``, ``.jsonl.gz``), Parquet or CSV with the columns of
  :data:`~diag_service.etpr.schema.EVENT_COLUMNS` (aliases accepted);
* ``lab``: a fault-injection lab run folder (``events.jsonl`` + ``timing.jsonl`` + ``truth.json``), or a
  folder of runs (``diag lab suite``);
* ``glm130b``: ``glm130b_incidents.csv`` from the public GLM-130B logbook (one 768-GPU job);
* ``philly``: Microsoft Philly ``cluster_job_log`` JSON (one record per job, per-attempt start/end);
* ``stepfun``: the StepFun InfiniteHBD node-fault trace replayed as one cluster-wide job (a model:
  the fault arrivals, nodes and classes are real, the recovery parameters are declared assumptions).

Every problem with the input becomes an :class:`~diag_service.etpr.schema.Issue`, never an exception,
except a path that does not exist or a format we cannot read at all (``EtprInputError``).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.domain import Category, FailureMode
from diag_service.errors import DiagError, ErrorKind
from diag_service.etpr.accounting import job_key
from diag_service.etpr.schema import COLUMN_ALIASES, EVENT_COLUMNS, EventType, Issue

_FLOAT_COLS = [c for c, t in EVENT_COLUMNS.items() if t == "f64"]
_STR_COLS = [c for c, t in EVENT_COLUMNS.items() if t == "str"]
_VALID_EVENTS = {e.value for e in EventType}
_VALID_MODES = {m.value for m in FailureMode}
_VALID_CATS = {c.value for c in Category}
EVENT_ENUM = pl.Enum([e.value for e in EventType])


class EtprInputError(DiagError, ValueError):
    """The input cannot be read at all (missing path, unknown format)."""

    kind = ErrorKind.INPUT


# ---------------------------------------------------------------------------------------------------
# normalisation and validation (column-wise; the same rules as schema.EtprEvent)
# ---------------------------------------------------------------------------------------------------

def _issue(issues: list[Issue], kind: str, code: str, message: str, count: int, examples: Iterable[Any] = ()) -> None:
    if count:
        issues.append(Issue(kind=kind, code=code, message=message, count=int(count),
                            examples=[str(x) for x in list(examples)[:5]]))


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
    renames = {a: c for a, c in COLUMN_ALIASES.items() if a in df.columns and c not in df.columns}
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
            _issue(issues, "warning", f"bad_type_{c}", f"column {c} has type {dt}; ignored", df.height)
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
        _issue(issues, "warning", "missing_job", "event without a job id; dropped", counts["no_job"],
               (f"row {x}" for x in ex))
    if counts["bad_ev"]:
        sel = lz.filter(pl.col("job").is_not_null() & pl.col("event").is_null()).select("job", "event_raw").collect()
        names = sel.get_column("event_raw").fill_null("<missing>").unique().head(5).to_list()
        _issue(issues, "warning", "unknown_event", f"unknown or missing event type ({', '.join(map(str, names))}); dropped",
               sel.height, sel.get_column("job").unique(maintain_order=True).head(5).to_list())
    if counts["bad_t"]:
        sel = lz.filter(pl.col("job").is_not_null() & pl.col("event").is_not_null() & pl.col("time").is_null()
                        ).select("job").collect()
        _issue(issues, "warning", "bad_time", "event without a finite time (unix seconds or ISO-8601); dropped",
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
            _issue(issues, "warning", f"invalid_{col}", f"{msg} (got {vals}); the value is ignored", sel.height,
                   sel.get_column("job").unique(maintain_order=True).head(5).to_list())
            fixes.append(pl.when(bad.fill_null(False)).then(None).otherwise(pl.col(col)).alias(col))
    if fixes:
        df = df.with_columns(fixes)

    # exact duplicates and out-of-order events are found after the sort, in compute_ledger
    df = df.with_columns(jid=job_key(pl.col("job")))
    if df.height == 0 and n0:
        _issue(issues, "warning", "no_valid_events", "no valid event left after validation", 1)
    return df, issues


# ---------------------------------------------------------------------------------------------------
# generic files
# ---------------------------------------------------------------------------------------------------

def _open_text(path: Path):  # noqa: ANN202 - text file object
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - caller closes


def _jsonl_slow(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Line-by-line JSONL reader that survives malformed lines (each becomes a counted warning)."""
    keys = set(EVENT_COLUMNS) | set(COLUMN_ALIASES)
    cols: dict[str, list[str | None]] = {k: [] for k in keys}
    bad: list[str] = []
    nonobj = 0
    with _open_text(path) as f:
        for i, line in enumerate(f, 1):
            s = line.strip()
            if not s:
                continue
            try:
                obj = json.loads(s)
            except (json.JSONDecodeError, RecursionError):
                bad.append(f"line {i}")
                continue
            if not isinstance(obj, dict):
                nonobj += 1
                continue
            for k in keys:
                v = obj.get(k)
                if v is None or isinstance(v, dict | list) or (isinstance(v, float) and not math.isfinite(v)):
                    cols[k].append(None)
                else:
                    cols[k].append(str(v) if not isinstance(v, bool) else str(v).lower())
    _issue(issues, "warning", "malformed_json", "line is not valid JSON; skipped", len(bad), bad)
    _issue(issues, "warning", "not_an_object", "JSON line is not an object; skipped", nonobj)
    data = {k: v for k, v in cols.items() if any(x is not None for x in v)}
    n = len(next(iter(cols.values()))) if cols else 0
    if not data:
        return pl.DataFrame({"event": pl.Series([None] * n, dtype=pl.String)})
    return pl.DataFrame({k: pl.Series(v, dtype=pl.String) for k, v in data.items()})


def read_event_file(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Raw rows of one events file (JSONL / JSONL.gz / Parquet / CSV), columns as found."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        return pl.read_parquet(path)
    if name.endswith(".csv"):
        return pl.read_csv(path, infer_schema_length=10000)
    if name.endswith((".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".json")):
        if not name.endswith(".gz"):
            try:
                df = pl.read_ndjson(path, infer_schema_length=10000)
                if "time" in df.columns and df.schema["time"] not in (pl.Float64, pl.Int64, pl.String):
                    raise pl.exceptions.ComputeError("unexpected time type")
                return df
            except Exception:  # noqa: BLE001 - any failure of the fast path falls back to the tolerant reader
                pass
        return _jsonl_slow(path, issues)
    raise EtprInputError(f"{path}: unknown events format (want .jsonl, .jsonl.gz, .parquet or .csv)")


def load_jobs_table(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Job metadata (``--jobs``): columns ``job`` (or ``job_id``), optional ``gpus``, ``expected_throughput``."""
    raw = read_event_file(path, issues)
    raw = raw.rename({a: c for a, c in COLUMN_ALIASES.items() if a in raw.columns and c not in raw.columns})
    if "job" not in raw.columns:
        _issue(issues, "warning", "jobs_table_no_job", f"{path}: no job/job_id column; the jobs table is ignored", 1)
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
# fault-injection lab
# ---------------------------------------------------------------------------------------------------

LAB_PROGRESS_EVERY = 5  # steps per synthesised progress sample (a trainer logs every N steps)


def _read_json_lines(path: Path, issues: list[Issue]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if not path.exists():
        return rows
    bad = []
    with _open_text(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                bad.append(f"{path.name}:{i}")
                continue
            if isinstance(obj, dict):
                rows.append(obj)
    _issue(issues, "warning", "malformed_json", "line is not valid JSON; skipped", len(bad), bad)
    return rows


def _lab_progress(timing: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    """Progress samples from the lab's per-rank step timings: a step ends when its slowest rank ends;
    every ``LAB_PROGRESS_EVERY`` steps, throughput = steps / seconds since the previous sample."""
    ends: dict[tuple[int, int], float] = {}
    for r in timing:
        try:
            key = (int(r.get("attempt", 0) or 0), int(r["step"]))
            end = float(r["end"])
        except (KeyError, TypeError, ValueError):
            continue
        ends[key] = max(ends.get(key, end), end)
    out: list[dict[str, Any]] = []
    by_att: dict[int, list[tuple[int, float]]] = {}
    for (att, step), end in sorted(ends.items()):
        by_att.setdefault(att, []).append((step, end))
    for steps in by_att.values():
        for i in range(LAB_PROGRESS_EVERY, len(steps), LAB_PROGRESS_EVERY):
            (s0, t0), (s1, t1) = steps[i - LAB_PROGRESS_EVERY], steps[i]
            if t1 > t0:
                out.append({"job": job, "event": "progress", "time": t1, "step": s1, "throughput": (s1 - s0) / (t1 - t0)})
    return out


def load_lab_run(run_dir: Path, issues: list[Issue], use_truth: bool = True) -> list[dict[str, Any]]:
    """Rows of one lab run: its ``events.jsonl`` plus progress samples from ``timing.jsonl``.

    The lab's events have no job id and no GPU count: the job id is the run folder's name and the GPU
    count is the ``ranks`` of the ``started`` event (each CPU rank stands for one GPU). With
    ``use_truth``, the scenario's ``truth.json`` (failure mode, category, faulty node, onset time)
    fills the failure events' attribution, and a fail-slow scenario gets a ``slow_detected`` at its
    onset; this is ground truth standing in for ``diag diagnose`` and is reported as an assumption.
    """
    job = run_dir.name
    events = _read_json_lines(run_dir / "events.jsonl", issues)
    rows: list[dict[str, Any]] = []
    gpus: float | None = None
    for e in events:
        row = {k: v for k, v in e.items() if not isinstance(v, dict | list)}
        row["job"] = job
        if e.get("event") == "started" and e.get("ranks") is not None and gpus is None:
            gpus = float(e["ranks"])
            row["gpus"] = gpus
        rows.append(row)
    if gpus is None:
        run = run_dir / "run.json"
        if run.exists():
            try:
                gpus = float(json.loads(run.read_text()).get("ranks"))
                if rows:
                    rows[0]["gpus"] = gpus
            except (ValueError, TypeError, json.JSONDecodeError):
                pass
    rows += _lab_progress(_read_json_lines(run_dir / "timing.jsonl", issues), job)
    truth_path = run_dir / "truth.json"
    if use_truth and truth_path.exists():
        try:
            truth = json.loads(truth_path.read_text())
        except json.JSONDecodeError:
            truth = {}
            _issue(issues, "warning", "bad_truth", f"{truth_path}: not valid JSON; ignored", 1, [job])
        if truth.get("fault_fired") and not truth.get("control"):
            mode, cat, node = truth.get("failure_mode"), truth.get("category"), truth.get("faulty_node")
            onset = truth.get("onset_time")
            if mode == FailureMode.FAIL_SLOW.value and onset is not None:
                rows.append({"job": job, "event": "slow_detected", "time": onset, "mode": mode,
                             "category": cat, "node": node, "cause": truth.get("scenario")})
            else:
                first = True
                for row in rows:
                    if row.get("event") in ("failure", "hang_detected") and (onset is None or row["time"] >= onset):
                        row.setdefault("mode", mode)
                        row.setdefault("category", cat)
                        row.setdefault("cause", truth.get("scenario"))
                        if row.get("node") is None:
                            row["node"] = node
                        if first and onset is not None and row.get("last_progress_time") is None:
                            row["onset_time"] = onset
                        first = False
            _issue(issues, "assumption", "lab_truth_attribution",
                   "lab run: failure mode, category, node and onset come from truth.json (ground truth), "
                   "standing in for diag diagnose", 1, [job])
    rows.sort(key=lambda r: float(r.get("time") or 0.0))
    return rows


def find_lab_runs(root: Path) -> list[Path]:
    """Lab run folders under ``root`` (``root`` itself if it holds ``events.jsonl``)."""
    if (root / "events.jsonl").exists():
        return [root]
    return sorted(p.parent for p in root.glob("*/events.jsonl"))


# ---------------------------------------------------------------------------------------------------
# GLM-130B logbook
# ---------------------------------------------------------------------------------------------------

GLM_GPUS = 768  # 96 DGX-A100 nodes x 8 GPUs (GLM-130B paper, sec. 3; logbook "96 nodes")
GLM_ITER_S = 88.5  # s/iteration at global batch 4224 (logbook "Speed Testing")
GLM_TFLOPS_EXPECTED = 134.0  # TFLOPS at global batch 4224 (logbook "Speed Testing")
GLM_UTC_OFFSET_H = 8  # headings are local UTC+8, run names UTC (hypothesis in the traces README)
GLM_END_LOCAL = "2022-07-03 00:00"  # end of pre-training (GLM-130B paper: trained May 6 - July 3, 2022)

_GLM_CATEGORY = {
    ("infra_hardware", "gpu_missing"): Category.GPU_HARDWARE,
    ("infra_hardware", "nvlink_error"): Category.GPU_HARDWARE,
    ("infra_hardware", "slow_node_suspected"): Category.GPU_HARDWARE,
    ("infra_hardware", None): Category.INFRASTRUCTURE,
    ("infra_storage", None): Category.STORAGE,
    ("infra_network", None): Category.NETWORK,
    ("training_instability", "nan_loss_after_data_change"): Category.DATA,
    ("training_instability", None): Category.CONFIG,
}


def glm_category(cat: str, sub: str) -> Category:
    """Our mapping of the GLM-130B silver labels (``proposed_category``, ``proposed_subcategory``)."""
    return _GLM_CATEGORY.get((cat, sub)) or _GLM_CATEGORY.get((cat, None)) or Category.UNKNOWN


def _glm_run_time(run_id: str) -> float | None:
    m = re.search(r"(\d{4})\.(\d{2})\.(\d{2})-(\d{2}):(\d{2}):(\d{2})", run_id)
    if not m:
        return None
    y, mo, d, h, mi, s = map(int, m.groups())
    return datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()


def _glm_local(date: str, tm: str) -> float | None:
    try:
        dt = datetime.strptime(f"{date} {tm or '00:00'}", "%Y-%m-%d %H:%M")
    except ValueError:
        return None
    return (dt.replace(tzinfo=UTC) - timedelta(hours=GLM_UTC_OFFSET_H)).timestamp()


def load_glm130b(path: Path, issues: list[Issue], init_s: float = 1200.0, init_s_after_upgrade: float = 600.0
                 ) -> list[dict[str, Any]]:
    """The GLM-130B pre-training run (2022-05-06 to 2022-07-03) as one job's lifecycle events.

    From ``glm130b_incidents.csv`` (derived from the public logbook; labels are a silver set): each run
    name is a (re)launch at that UTC time; each fail-stop heading (local UTC+8 time) is a failure, each
    planned change a ``killed`` (cause ``planned: ...``) followed by a new allocation at the relaunch;
    the fail-slow entry (127 vs 134 TFLOPS) is a ``slow_detected`` with r = 127/134 until the next
    relaunch; restarts that go back to the same step as the previous relaunch roll back to it
    (``rollback_time``). Declared assumptions (parameters): ``init_s`` seconds from launch to first
    step (``init_s_after_upgrade`` after the 2022-06-06 file-system upgrade, when loading took about a
    minute), checkpoints every 500 iterations until the first failure and every 100 after it (logbook),
    88.5 s per iteration. Units: seconds, GPUs.
    """
    job = "glm-130B"
    with open(path, encoding="utf-8") as f:
        entries = list(csv.DictReader(f))
    rows: list[dict[str, Any]] = []
    upgrade = _glm_local("2022-06-06", "17:00") or 0.0
    end = _glm_local(*GLM_END_LOCAL.split(" ")) or 0.0
    launches: list[tuple[float, dict[str, Any]]] = []  # (relaunch time, entry)
    skipped = []
    first_failure: float | None = None
    last_from_step: str | None = None
    prev_launch: float | None = None
    for e in entries:
        run_times = [t for t in (_glm_run_time(r) for r in (e.get("run_ids") or "").split(";") if r.strip()) if t]
        mode = e.get("proposed_mode", "")
        heading_t = _glm_local(e.get("date", ""), e.get("time_local", ""))
        if mode == "launch" and run_times:
            t0 = run_times[0]
            rows += [{"job": job, "event": "submitted", "time": t0, "gpus": GLM_GPUS,
                      "expected_throughput": GLM_TFLOPS_EXPECTED},
                     {"job": job, "event": "allocated", "time": t0},
                     {"job": job, "event": "started", "time": t0}]
            launches.append((t0, e))
            prev_launch = t0
            continue
        if mode == "fail-slow":
            if heading_t is not None:
                node = re.search(r"\bn3\d{4}\b", e.get("text", ""))
                rows.append({"job": job, "event": "slow_detected", "time": heading_t, "ratio": 127.0 / 134.0,
                             "category": Category.UNKNOWN.value, "node": node.group(0) if node else None,
                             "cause": e.get("proposed_subcategory")})
            continue
        if not run_times:
            skipped.append(f"line {e.get('source_line')}")
            continue
        relaunch = run_times[0]
        stop_t = heading_t
        if stop_t is None or not (prev_launch is not None and prev_launch < stop_t <= relaunch + 600):
            _issue(issues, "assumption", "glm_heading_time",
                   "GLM-130B entry whose heading time is missing or inconsistent with the run names: the stop is "
                   "placed at the relaunch time (no recovery time counted)", 1, [f"line {e.get('source_line')}"])
            stop_t = relaunch
        stop_t = min(stop_t, relaunch)
        cat, sub = e.get("proposed_category", ""), e.get("proposed_subcategory", "")
        node = re.search(r"\bn3\d{4}\b", e.get("text", ""))
        from_step = (e.get("restart_from_step") or "").split(";")[0] or None
        rollback = None
        if from_step and from_step == last_from_step and prev_launch is not None:
            rollback = prev_launch + (init_s if prev_launch < upgrade else init_s_after_upgrade)
        if from_step:
            last_from_step = from_step
        if mode == "fail-stop":
            rows.append({"job": job, "event": "failure", "time": stop_t, "mode": FailureMode.FAIL_STOP.value,
                         "category": glm_category(cat, sub).value, "node": node.group(0) if node else None,
                         "cause": sub})
            rows.append({"job": job, "event": "restart", "time": relaunch, "from_step": from_step,
                         "rollback_time": rollback})
            first_failure = first_failure or stop_t
        else:  # planned change or maintenance: the run is stopped and relaunched
            rows.append({"job": job, "event": "killed", "time": stop_t, "cause": f"planned: {sub}"})
            rows.append({"job": job, "event": "allocated", "time": relaunch})
            rows.append({"job": job, "event": "started", "time": relaunch, "from_step": from_step,
                         "rollback_time": rollback})
        launches.append((relaunch, e))
        prev_launch = relaunch
        for extra in run_times[1:]:  # a second relaunch in the same entry: the first relaunch failed
            rows.append({"job": job, "event": "failure", "time": extra, "mode": FailureMode.FAIL_STOP.value,
                         "category": glm_category(cat, sub).value, "cause": f"{sub}: relaunch failed"})
            rows.append({"job": job, "event": "restart", "time": extra})
            launches.append((extra, e))
            prev_launch = extra
    _issue(issues, "assumption", "glm_no_run_id", "GLM-130B entry without a run name: no relaunch time, skipped",
           len(skipped), skipped)
    # first steps and checkpoints of each attempt (declared assumptions); an attempt trains until its stop
    launches.sort(key=lambda x: x[0])
    stops = sorted(r["time"] for r in rows if r["event"] in ("failure", "killed"))
    for i, (t, _e) in enumerate(launches):
        nxt = launches[i + 1][0] if i + 1 < len(launches) else end
        nxt = min([s for s in stops if t < s <= nxt] or [nxt])
        first = t + (init_s if t < upgrade else init_s_after_upgrade)
        rows.append({"job": job, "event": "first_step", "time": first})
        every = 500 if (first_failure is None or t < first_failure) else 100
        k = 1
        while first + k * every * GLM_ITER_S < nxt:
            rows.append({"job": job, "event": "checkpoint_saved", "time": first + k * every * GLM_ITER_S})
            k += 1
    rows.append({"job": job, "event": "finished", "time": end, "status": "succeeded"})
    rows.sort(key=lambda r: r["time"])
    _issue(issues, "assumption", "glm_parameters",
           f"GLM-130B timeline: {GLM_GPUS} GPUs; launch-to-first-step {init_s:.0f} s ({init_s_after_upgrade:.0f} s "
           f"after the 2022-06-06 upgrade); checkpoints every 500 then 100 iterations at {GLM_ITER_S} s/iteration; "
           f"headings read as UTC+{GLM_UTC_OFFSET_H}; end of training {GLM_END_LOCAL} local", 1, [job])
    return rows


# ---------------------------------------------------------------------------------------------------
# Philly-style per-attempt traces
# ---------------------------------------------------------------------------------------------------

def _philly_time(v: Any) -> float | None:
    if v in (None, "None", ""):
        return None
    try:
        return datetime.strptime(str(v), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def load_philly(path: Path, issues: list[Issue]) -> list[dict[str, Any]]:
    """Rows from a Philly ``cluster_job_log`` (JSON list of jobs with ``attempts``).

    Per attempt: ``allocated``/``started``/``first_step`` at ``start_time`` (Philly has no step
    information, so productive time is assumed to start with the attempt: an upper bound on ETPR),
    ``failure`` + ``released`` at ``end_time`` for every attempt but the last, and the last ends as the
    job's status says (Pass: finished succeeded, Failed: failure + finished failed, Killed: killed).
    GPUs = number of GPUs listed in the attempt's ``detail``. Times are read as UTC.
    """
    try:
        with _open_text(path) as f:
            data = json.load(f)
    except (json.JSONDecodeError, OSError) as exc:
        raise EtprInputError(f"{path}: not a Philly cluster_job_log JSON ({exc})") from exc
    if not isinstance(data, list):
        raise EtprInputError(f"{path}: a Philly cluster_job_log is a JSON list of jobs")
    rows: list[dict[str, Any]] = []
    bad = []
    for j in data:
        if not isinstance(j, dict) or not j.get("jobid"):
            bad.append("?")
            continue
        job, status = str(j["jobid"]), str(j.get("status", ""))
        sub = _philly_time(j.get("submitted_time"))
        if sub is not None:
            rows.append({"job": job, "event": "submitted", "time": sub})
        attempts = [a for a in (j.get("attempts") or []) if isinstance(a, dict)]
        for i, a in enumerate(attempts):
            start, end = _philly_time(a.get("start_time")), _philly_time(a.get("end_time"))
            gpus = sum(len(d.get("gpus") or []) for d in (a.get("detail") or []) if isinstance(d, dict)) or None
            if start is None:
                bad.append(job)
                continue
            rows += [{"job": job, "event": "allocated", "time": start, "gpus": gpus},
                     {"job": job, "event": "started", "time": start},
                     {"job": job, "event": "first_step", "time": start}]
            if end is None:
                continue
            last = i == len(attempts) - 1
            if not last:
                rows += [{"job": job, "event": "failure", "time": end, "cause": "philly attempt ended"},
                         {"job": job, "event": "released", "time": end}]
            elif status == "Pass":
                rows.append({"job": job, "event": "finished", "time": end, "status": "succeeded"})
            elif status == "Killed":
                rows.append({"job": job, "event": "killed", "time": end})
            else:
                rows += [{"job": job, "event": "failure", "time": end, "cause": f"philly status {status}"},
                         {"job": job, "event": "finished", "time": end, "status": "failed"}]
    _issue(issues, "warning", "philly_bad_record", "Philly record or attempt without jobid/start_time; skipped",
           len(bad), bad)
    _issue(issues, "assumption", "philly_no_steps",
           "Philly traces carry no step information: productive time is assumed to start with each attempt and "
           "no checkpoint is known (so a failed attempt's whole run is lost work)", 1)
    return rows


# ---------------------------------------------------------------------------------------------------
# StepFun InfiniteHBD node faults, replayed as one cluster-wide job
# ---------------------------------------------------------------------------------------------------

_STEPFUN_CLASS = {
    "GPU": Category.GPU_HARDWARE, "NIC": Category.NETWORK, "Parameter Plane Cable": Category.NETWORK,
    "File System": Category.STORAGE, "Unknown Error": Category.UNKNOWN, "Other Failures": Category.UNKNOWN,
    "Stress Test Failure": Category.UNKNOWN, "Training Task Troubleshooting": Category.UNKNOWN,
}
STEPFUN_T0 = datetime(2024, 3, 30, tzinfo=UTC).timestamp()  # trace start (README: 348 days from 2024-03-30)


def stepfun_category(level: str, klass: str) -> Category:
    """Our mapping of the StepFun fault taxonomy (Level, Class) to :class:`Category`."""
    if klass in _STEPFUN_CLASS:
        return _STEPFUN_CLASS[klass]
    return Category.INFRASTRUCTURE if level in ("Hardware Failure", "Software Failure") else Category.UNKNOWN


def load_stepfun(path: Path, issues: list[Issue], nodes: int = 400, gpus_per_node: int = 8,
                 detect_s: float = 300.0, recover_s: float = 1800.0, init_s: float = 600.0,
                 ckpt_every_s: float = 3600.0) -> list[dict[str, Any]]:
    """A model job: all ``nodes`` x ``gpus_per_node`` GPUs train for the 349 days of the StepFun trace, and
    every node ``fault_start`` stops it (fail-stop on that node, category from the fault class).

    Real: the fault times, nodes and classes. Declared assumptions (parameters, seconds): the fault is
    detected ``detect_s`` after it starts (onset = fault_start), the faulty node is swapped for a spare
    and the job relaunched ``recover_s`` after detection, start-up takes ``init_s``, checkpoints every
    ``ckpt_every_s``. Faults that arrive while the job is already recovering join that episode.
    """
    try:
        with _open_text(path) as f:
            trace = json.load(f)
    except (json.JSONDecodeError, OSError) as exc:
        raise EtprInputError(f"{path}: not the StepFun fault_trace.json ({exc})") from exc
    job = f"stepfun-{nodes}-node-replay"
    starts = sorted(((float(e["event_time"]) * 86400.0 + STEPFUN_T0, e) for e in trace
                    if isinstance(e, dict) and e.get("event_type") == "fault_start" and "event_time" in e),
                    key=lambda x: x[0])
    end = max((float(e["event_time"]) for e in trace if isinstance(e, dict) and "event_time" in e), default=0.0)
    end_t = end * 86400.0 + STEPFUN_T0
    rows: list[dict[str, Any]] = [
        {"job": job, "event": "allocated", "time": STEPFUN_T0, "gpus": nodes * gpus_per_node},
        {"job": job, "event": "started", "time": STEPFUN_T0},
    ]
    first = STEPFUN_T0 + init_s
    busy_until = STEPFUN_T0
    merged = 0
    attempt_starts = [first]
    for t, e in starts:
        if t < busy_until:
            merged += 1
            continue
        ft = e.get("fault_type") or {}
        cat = stepfun_category(str(ft.get("Level", "")), str(ft.get("Class", "")))
        t_det = t + detect_s
        rows.append({"job": job, "event": "failure", "time": t_det, "onset_time": t,
                     "mode": FailureMode.FAIL_STOP.value, "category": cat.value, "node": e.get("node_id"),
                     "cause": f"{ft.get('Class', '?')}: {ft.get('Desc', '?')}"})
        rows.append({"job": job, "event": "restart", "time": t_det + recover_s})
        busy_until = t_det + recover_s + init_s
        attempt_starts.append(busy_until)
    for i, a in enumerate(attempt_starts):
        rows.append({"job": job, "event": "first_step", "time": a})
        nxt = starts_after(a, rows) if i + 1 < len(attempt_starts) else end_t
        k = 1
        while a + k * ckpt_every_s < nxt:
            rows.append({"job": job, "event": "checkpoint_saved", "time": a + k * ckpt_every_s})
            k += 1
    rows.append({"job": job, "event": "finished", "time": end_t, "status": "succeeded"})
    _issue(issues, "assumption", "stepfun_model",
           f"StepFun replay: one job on {nodes} nodes x {gpus_per_node} GPUs for the whole trace; every node fault "
           f"stops it; detection {detect_s:.0f} s, spare swap + relaunch {recover_s:.0f} s, start-up {init_s:.0f} s, "
           f"checkpoint every {ckpt_every_s:.0f} s are assumptions, the fault times/nodes/classes are real", 1, [job])
    _issue(issues, "assumption", "stepfun_merged", "node fault during an ongoing recovery: merged into that episode",
           merged)
    return rows


def starts_after(t: float, rows: list[dict[str, Any]]) -> float:
    """Time of the first ``failure`` onset after ``t`` in ``rows`` (or +inf)."""
    return min((r["onset_time"] for r in rows if r["event"] == "failure" and r["onset_time"] > t), default=math.inf)


# ---------------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------------

FORMATS = ("auto", "events", "lab", "glm130b", "philly", "stepfun")


def detect_format(path: Path) -> str:
    """Guess the source format from the path (see :data:`FORMATS`)."""
    if path.is_dir():
        return "lab" if find_lab_runs(path) else "events"
    name = path.name.lower()
    if name.startswith("glm130b") and name.endswith(".csv"):
        return "glm130b"
    if name == "fault_trace.json" or "stepfun" in name:
        return "stepfun"
    if "philly" in name or name.startswith("cluster_job_log"):
        return "philly"
    return "events"


def load_events(path: Path, fmt: str = "auto", jobs: Path | None = None, use_truth: bool = True
                ) -> tuple[pl.DataFrame, list[Issue]]:
    """Read ``path`` in format ``fmt`` and return normalised events and the issues met.

    Raises :class:`EtprInputError` only when nothing can be read (missing path, unknown format).
    """
    if not path.exists():
        raise EtprInputError(f"{path}: no such file or folder")
    issues: list[Issue] = []
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in FORMATS:
        raise EtprInputError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    rows: list[dict[str, Any]] | None = None
    if fmt == "lab":
        runs = find_lab_runs(path)
        if not runs:
            raise EtprInputError(f"{path}: no lab run (no events.jsonl) found")
        rows = []
        for r in runs:
            rows += load_lab_run(r, issues, use_truth=use_truth)
    elif fmt == "glm130b":
        rows = load_glm130b(path, issues)
    elif fmt == "philly":
        rows = load_philly(path, issues)
    elif fmt == "stepfun":
        rows = load_stepfun(path, issues)
    if rows is not None:
        raw = rows_to_frame(rows)
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(
            (".jsonl", ".ndjson", ".jsonl.gz", ".parquet", ".csv")))
        if not files:
            raise EtprInputError(f"{path}: no events file in this folder")
        raw = pl.concat([read_event_file(p, issues) for p in files], how="diagonal_relaxed")
    else:
        raw = read_event_file(path, issues)
    events, issues = normalize_events(raw, issues)
    if jobs is not None:
        events = apply_jobs_table(events, load_jobs_table(jobs, issues))
    return events, issues


def rows_to_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame of the canonical (and alias) columns from dict rows, values as strings (cast later)."""
    keys = list(EVENT_COLUMNS) + [a for a in COLUMN_ALIASES if any(a in r for r in rows[:1000])]
    data: dict[str, list[str | None]] = {k: [] for k in keys}
    for r in rows:
        for k in keys:
            v = r.get(k)
            data[k].append(None if v is None or isinstance(v, dict | list) else str(v))
    return pl.DataFrame({k: pl.Series(v, dtype=pl.String) for k, v in data.items()})
