"""What every event source shares: the input error, issue counting, text opening, tolerant JSON Lines and
the conversion of dict rows into a raw frame."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import polars as pl

from diag_service.errors import DiagError, ErrorKind
from diag_service.etpr.schema import COLUMN_ALIASES, EVENT_COLUMNS, Issue
from diag_service.jsonl import BadLine, iter_jsonl


class EtprInputError(DiagError, ValueError):
    """The input cannot be read at all (missing path, unknown format)."""

    kind = ErrorKind.INPUT


@dataclass(frozen=True)
class LoadOptions:
    """Options a source may use. ``use_truth``: lab runs take failure attribution from ``truth.json``.
    ``job_id``: the job id for events that carry none (a lab run's own ``events.jsonl``, an events file of
    one job); ``None`` keeps each source's rule."""

    use_truth: bool = True
    job_id: str | None = None


def add_issue(issues: list[Issue], kind: str, code: str, message: str, count: int,
              examples: Iterable[Any] = ()) -> None:
    """Append an :class:`Issue` when ``count`` is positive (up to five examples, as strings)."""
    if count:
        issues.append(Issue(kind=kind, code=code, message=message, count=int(count),
                            examples=[str(x) for x in list(examples)[:5]]))


def open_text(path: Path) -> IO[str]:
    """``path`` opened as UTF-8 text (gunzipped when it ends in ``.gz``; undecodable bytes replaced)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - caller closes


def open_binary(path: Path) -> IO[bytes]:
    """``path`` opened for reading bytes (gunzipped when it ends in ``.gz``); the caller closes it."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115 - caller closes


def read_json_lines(path: Path, issues: list[Issue]) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines file (``[]`` when it does not exist), read by
    :func:`diag_service.jsonl.iter_jsonl`: lines that are not JSON (a truncated line, nesting too deep, a
    number too long, a line over :data:`~diag_service.jsonl.MAX_LINE_BYTES`) are counted (warning
    ``malformed_json``, examples ``name:line``) and skipped; lines that are JSON but not objects are skipped."""
    if not path.exists():
        return []
    skipped: list[BadLine] = []
    with open_binary(path) as f:
        rows = [obj for _n, obj in iter_jsonl(f, skipped)]
    bad = [f"{path.name}:{b.line}" for b in skipped if b.kind != "not_object"]
    add_issue(issues, "warning", "malformed_json", "line is not valid JSON; skipped", len(bad), bad)
    return rows


def rows_to_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame of the canonical (and alias) columns from dict rows, values as strings (cast later)."""
    keys = list(EVENT_COLUMNS) + [a for a in COLUMN_ALIASES if any(a in r for r in rows[:1000])]
    data: dict[str, list[str | None]] = {k: [] for k in keys}
    for r in rows:
        for k in keys:
            v = r.get(k)
            data[k].append(None if v is None or isinstance(v, dict | list) else str(v))
    return pl.DataFrame({k: pl.Series(v, dtype=pl.String) for k, v in data.items()})
