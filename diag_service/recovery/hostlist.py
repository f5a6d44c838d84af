"""Slurm hostlists (``gpu[001-004,007],login1``): parsed, counted before expansion, expanded within a limit.

Node names in a recovery plan come from log text and timing feeds, so a hostlist there is untrusted: it
is counted from its ranges without building a single name (``gpu[0-999999999]`` costs nothing), and
expanded only when the count is within the caller's limit.

Grammar (Slurm's ``hostlist`` expressions, ``man scontrol`` "HOSTLIST EXPRESSIONS"): a comma-separated
list of items; an item is literal text with zero or more bracket groups; a group is a comma-separated
list of numbers ``N`` or ranges ``LO-HI`` (``LO <= HI``). A range whose low bound has leading zeros pads
every number to that width (``[008-010]`` gives ``008 009 010``). Brackets do not nest.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator

from diag_service.errors import InputError

#: Longest hostlist text accepted (characters); a longer value is refused before it is parsed.
MAX_TEXT = 1024

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"(\d{1,18})(?:-(\d{1,18}))?")

#: One bracket group: (low, high, width) ranges; width 0 means no zero padding.
_Group = tuple[tuple[int, int, int], ...]


class HostlistError(InputError, ValueError):
    """The text is not a Slurm hostlist expression, or names too many nodes; the message says what."""


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError("nested brackets")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError("']' without '['")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError("'[' without ']'")
    items.append(text[start:])
    return items


def _group(body: str) -> _Group:
    ranges = []
    for part in body.split(","):
        m = _RANGE.fullmatch(part)
        if m is None:
            raise HostlistError(f"{part[:40]!r} is not a number or a range LO-HI")
        lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_s), int(hi_s)
        if lo > hi:
            raise HostlistError(f"range {part!r} goes down")
        width = len(lo_s) if len(lo_s) > 1 and lo_s.startswith("0") else 0
        ranges.append((lo, hi, width))
    return tuple(ranges)


def _parse(text: str) -> list[list[str | _Group]]:
    if len(text) > MAX_TEXT:
        raise HostlistError(f"longer than {MAX_TEXT} characters")
    out: list[list[str | _Group]] = []
    for item in _split_top(text):
        if not item:
            raise HostlistError("an empty name")
        parts: list[str | _Group] = []
        pos = 0
        for m in _GROUP.finditer(item):
            if m.start() > pos:
                parts.append(item[pos:m.start()])
            parts.append(_group(m.group(1)))
            pos = m.end()
        if pos < len(item):
            parts.append(item[pos:])
        out.append(parts)
    return out


def _size(g: _Group) -> int:
    return sum(hi - lo + 1 for lo, hi, _w in g)


def is_hostlist(text: str) -> bool:
    """True when ``text`` has hostlist syntax (a bracket or a comma), i.e. may name more than one node."""
    return "[" in text or "]" in text or "," in text


def count_hosts(text: str) -> int:
    """How many names ``text`` expands to (duplicates counted), computed from its ranges without
    expanding them. Raises :class:`HostlistError` for text that is not a hostlist."""
    return sum(math.prod(_size(p) for p in parts if not isinstance(p, str)) for parts in _parse(text))


def _names(parts: list[str | _Group]) -> Iterator[str]:
    choices: list[list[str] | Iterator[str]] = []
    for p in parts:
        if isinstance(p, str):
            choices.append([p])
        else:
            choices.append([f"{i:0{w}d}" if w else str(i) for lo, hi, w in p for i in range(lo, hi + 1)])
    for combo in itertools.product(*choices):
        yield "".join(combo)


def expand_hosts(text: str, limit: int) -> list[str]:
    """The names of ``text`` in order, duplicates dropped. Raises :class:`HostlistError` when ``text`` is
    not a hostlist or names more than ``limit`` nodes (counted before anything is expanded)."""
    n = count_hosts(text)
    if n > limit:
        raise HostlistError(f"names {n} nodes, more than {limit}")
    return list(dict.fromkeys(name for parts in _parse(text) for name in _names(parts)))
