"""The ``events`` source: our own event files (JSON Lines, ``.jsonl.gz``, Parquet, CSV with the columns of
:data:`~diag_service.etpr.schema.EVENT_COLUMNS`, aliases accepted), one file or a folder of them. It accepts
any path, so it is tried last."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from diag_service.etpr.schema import COLUMN_ALIASES, EVENT_COLUMNS, Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, open_binary
from diag_service.jsonl import BadLine, iter_jsonl

#: File name endings the ``events`` source reads in a folder.
EVENT_FILE_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".parquet", ".csv")


def _jsonl_slow(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Line-by-line JSONL reader (:func:`diag_service.jsonl.iter_jsonl`) that survives malformed lines: a
    line that is not JSON (or too long, nested too deep, a number too long) is counted as warning
    ``malformed_json``, one that is JSON but not an object as ``not_an_object``; both are skipped. Columns
    are the known ones (:data:`EVENT_COLUMNS` and aliases), values as strings."""
    keys = set(EVENT_COLUMNS) | set(COLUMN_ALIASES)
    cols: dict[str, list[str | None]] = {k: [] for k in keys}
    skipped: list[BadLine] = []
    with open_binary(path) as f:
        for _n, obj in iter_jsonl(f, skipped):
            for k in keys:
                v = obj.get(k)
                if v is None or isinstance(v, dict | list) or (isinstance(v, float) and not math.isfinite(v)):
                    cols[k].append(None)
                else:
                    cols[k].append(str(v) if not isinstance(v, bool) else str(v).lower())
    bad = [f"line {b.line}" for b in skipped if b.kind != "not_object"]
    nonobj = len(skipped) - len(bad)
    add_issue(issues, "warning", "malformed_json", "line is not valid JSON; skipped", len(bad), bad)
    add_issue(issues, "warning", "not_an_object", "JSON line is not an object; skipped", nonobj)
    data = {k: v for k, v in cols.items() if any(x is not None for x in v)}
    n = len(next(iter(cols.values()))) if cols else 0
    if not data:
        return pl.DataFrame({"event": pl.Series([None] * n, dtype=pl.String)})
    return pl.DataFrame({k: pl.Series(v, dtype=pl.String) for k, v in data.items()})


def read_event_file(path: Path, issues: list[Issue]) -> pl.DataFrame:
    """Raw rows of one events file (JSONL / JSONL.gz / Parquet / CSV), columns as found. Raises
    :class:`EtprInputError` for an unknown extension and a Parquet or CSV file that cannot be read at all."""
    name = path.name.lower()
    if name.endswith((".parquet", ".csv")):
        try:
            if name.endswith(".parquet"):
                return pl.read_parquet(path)
            # a row with more fields than the header keeps the header's (a hand-edited file)
            return pl.read_csv(path, infer_schema_length=10000, truncate_ragged_lines=True)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise EtprInputError(f"{path}: cannot read ({type(exc).__name__}: {str(exc)[:200]})") from None
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



@register_source("events", detect=lambda path: True, priority=100,
                 description="events JSONL / JSONL.gz / Parquet / CSV (a file or a folder of files)")
def load_events_files(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of an events file, or of every events file (:data:`EVENT_FILE_SUFFIXES`) in a folder, in
    name order. Raises :class:`EtprInputError` for a folder without one or an unknown file type."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(EVENT_FILE_SUFFIXES))
        if not files:
            raise EtprInputError(f"{path}: no events file in this folder")
        return pl.concat([read_event_file(p, issues) for p in files], how="diagonal_relaxed")
    return read_event_file(path, issues)
