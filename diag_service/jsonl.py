"""One tolerant JSON Lines reader for the whole package: records of a file, bad lines skipped and counted.

JSONL here is what our own tools and users' exporters write: one JSON object per line, ``\\n``-separated
(``\\r\\n`` too), blank lines allowed. A reader of such a file must survive what a crash or a hand edit
leaves behind: a truncated last line, a line that is not JSON, a line that is JSON but not an object,
bytes that are not UTF-8, and a line so long that holding it would be a memory problem. None of these
stops the reading; each becomes a :class:`BadLine` handed back to the caller, who decides what to tell
the user (a warning with a count, a per-line error, nothing).

Decoding is UTF-8 with replacement (``errors="replace"``, as every reader of the package did): an
invalid byte inside a string value becomes U+FFFD and the record is kept; one outside a string makes
the line invalid JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

#: Longest line kept, in bytes (in characters for text input): 1 MiB. Far above any record the package
#: reads (a lab timing or event record is under 1 KiB, a label manifest line a path and some metadata);
#: a longer line is skipped without ever being held whole in memory.
MAX_LINE_BYTES = 1 << 20
#: Read size while skipping the rest of an over-long line, bytes.
_SKIP_CHUNK = 1 << 16

BadKind = Literal["invalid_json", "not_object", "too_long"]


@dataclass(frozen=True)
class BadLine:
    """One skipped line: its 1-based ``line`` number, why (``kind``) and a one-line ``reason`` for people."""

    line: int
    kind: BadKind
    reason: str


def _lines(source: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Lines of a binary stream, ``None`` for a line longer than ``limit`` bytes (its rest is consumed)."""
    while True:
        raw = source.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            while (rest := source.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield raw


def _parse(text: str, n: int, skipped: list[BadLine] | None) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digit limit; nesting too deep
        if skipped is not None:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            skipped.append(BadLine(n, "invalid_json", f"invalid JSON ({first[:200]})"))
        return None
    if not isinstance(obj, dict):
        if skipped is not None:
            skipped.append(BadLine(n, "not_object", f"expected an object, got {type(obj).__name__}"))
        return None
    return obj


def iter_jsonl(
    source: str | os.PathLike[str] | IO[bytes] | Iterable[str],
    skipped: list[BadLine] | None = None,
    *,
    first_line: int = 1,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for every JSON object line of ``source``, in file order.

    ``source``: a path (opened and closed here), a binary stream (e.g. ``gzip.open(p, "rb")``; read up
    to its end, not closed) or an iterable of text lines (already in memory; the length bound is then
    in characters). Blank lines are skipped silently; every other line that gives no object is appended
    to ``skipped`` (when given) as a :class:`BadLine` and skipped. ``first_line``: the number of the
    first line (for a member that starts inside a larger text). Raises ``OSError`` only for a path that
    cannot be opened or read.
    """
    if isinstance(source, str | os.PathLike):
        with open(Path(source), "rb") as fh:
            yield from iter_jsonl(fh, skipped, first_line=first_line, max_line_bytes=max_line_bytes)
        return
    if hasattr(source, "readline"):
        lines: Iterable[bytes | str | None] = _lines(source, max_line_bytes)  # type: ignore[arg-type]
        unit = "bytes"
    else:
        lines = (None if len(s) > max_line_bytes else s for s in source)  # type: ignore[union-attr]
        unit = "characters"
    for n, raw in enumerate(lines, first_line):
        if raw is None:
            if skipped is not None:
                skipped.append(BadLine(n, "too_long", f"line longer than {max_line_bytes} {unit}"))
            continue
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        obj = _parse(text, n, skipped)
        if obj is not None:
            yield n, obj


def read_jsonl(
    path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES
) -> tuple[list[dict[str, Any]], list[BadLine]]:
    """All records of the JSONL file at ``path`` and the lines skipped (see :func:`iter_jsonl`).

    A missing file is ``([], [])``; any other ``OSError`` is raised.
    """
    skipped: list[BadLine] = []
    try:
        records = [rec for _n, rec in iter_jsonl(path, skipped, max_line_bytes=max_line_bytes)]
    except FileNotFoundError:
        return [], []
    return records, skipped


__all__ = ["MAX_LINE_BYTES", "BadLine", "iter_jsonl", "read_jsonl"]
