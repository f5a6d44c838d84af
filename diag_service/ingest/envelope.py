"""Envelopes around log lines (container runtimes, log shippers, a Markdown quote), unwrapped to the lines a terminal
showed.

A log copied off a Kubernetes node, out of a log store or out of a discussion is rarely what the process printed:

* **CRI** (containerd and CRI-O, the kubelet's ``/var/log/pods/<ns>_<pod>_<uid>/<container>/N.log``; the
  format of the Kubernetes CRI logging proposal, ``kubernetes/design-proposals-archive``
  ``node/kubelet-cri-logging.md``): ``<RFC 3339 nanosecond time> <stdout|stderr> <F|P> <text>``, ``P`` for a
  partial line that the runtime split (16 KiB) and the next record continues;
* **a Markdown quote**: ``> `` before every line, a log quoted in an issue's reply or a forum post (every level is
  removed, a Python prompt ``>>>`` is kept);
* **JSON lines** (Docker's ``json-file`` driver, ``/var/lib/docker/containers/<id>/<id>-json.log``:
  ``{"log": "<text>\\n", "stream": "stderr", "time": "..."}``; Fluent Bit / Fluentd records, whose text is under
  ``log``; exports of Loki, Vector or Elasticsearch, under ``message``; Google Cloud Logging, ``textPayload``).

Inside those, a traceback's quotes and indentation are escaped and every line starts with the envelope, so
neither the line-prefix detection (``[rank3]:``, ``gpu-node-001: ``) nor the traceback reader sees them.
:func:`sniff` decides from a member's first lines whether it is one of these; :func:`unwrap` turns a block of
complete lines into ``<time> <text>`` lines, the shape ``kubectl logs --timestamps`` gives, which
:mod:`diag_service.logformat` reads (the time is the collector's, the text keeps its own prefixes); a quoted line
into its text.

One record gives one line, so line numbers in evidence stay those of the file (a partial record is not
joined to the next; a shipper's record holding several lines, a multiline-parser traceback, gives several).
A line that is not an envelope of the member's kind (a header, a shipper's own message) is kept as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from enum import StrEnum

from diag_service.limits import LIMITS

#: ``<time> <stream> <F|P> <text>`` (CRI); group 1 the time, group 2 the text.
CRI_LINE = re.compile(
    rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)) (?:stdout|stderr) [FP] ?(.*)"
)
#: Keys holding the text in JSON envelopes, in order of preference; and keys holding the time.
TEXT_KEYS = ("log", "message", "textPayload", "msg")
TIME_KEYS = ("time", "timestamp", "@timestamp", "ts")
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)$")
#: Lines sampled to decide, and the share of non-empty ones that must be envelopes of one kind.
SNIFF_LINES = 20
SNIFF_SHARE = 0.8


class Envelope(StrEnum):
    CRI = "cri"
    JSON = "json"
    QUOTE = "quote"


#: A Markdown quote's marker at a line's start: a log quoted in an issue's reply or a forum post (``> > `` for a
#: quote of a quote; a Python prompt ``>>> `` is not one).
QUOTE_LINE = re.compile(rb">(?: |$)")


#: Keys of a structured record that give the writer's global rank (kept as a ``[rankN]: `` prefix of its text).
RANK_KEYS = ("rank", "global_rank")


def _json_text(line: bytes) -> tuple[str, str | None] | None:
    """``(text, time)`` of one JSON envelope line, ``None`` when the line is not one. A record's integer ``rank``
    (``global_rank``) field becomes the text's ``[rankN]: `` prefix, as torchrun prints it."""
    if not line.startswith(b"{"):
        return None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser's stack (hostile input)
        return None
    if not isinstance(obj, dict):
        return None
    text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
    if text is None:
        return None
    when = next((obj[k] for k in TIME_KEYS if isinstance(obj.get(k), str) and _RFC3339.match(obj[k])), None)
    rank = next((obj[k] for k in RANK_KEYS if type(obj.get(k)) is int and 0 <= obj[k] <= LIMITS.max_rank), None)
    if rank is not None:
        text = "".join(f"[rank{rank}]: {part}" if part else part for part in text.splitlines(keepends=True)) or text
    return text, when


def sniff(head: bytes) -> Envelope | None:
    """The envelope of a member from its first bytes (``None``: plain lines): :data:`SNIFF_SHARE` of the first
    :data:`SNIFF_LINES` non-empty lines must be envelopes of one kind (all of them when there are fewer than 3)."""
    parts = head.split(b"\n")
    if not head.endswith(b"\n"):
        parts.pop()  # cut by the read: not a whole line
    lines = [x for x in parts if x.strip()][:SNIFF_LINES]
    if not lines:
        return None
    need = SNIFF_SHARE * len(lines) if len(lines) >= 3 else len(lines)  # a short file: every line
    if sum(CRI_LINE.fullmatch(x.rstrip(b"\r")) is not None for x in lines) >= need:
        return Envelope.CRI
    if sum(_json_text(x) is not None for x in lines) >= need:
        return Envelope.JSON
    if sum(QUOTE_LINE.match(x.rstrip(b"\r")) is not None for x in lines) >= need:
        return Envelope.QUOTE
    return None


def _unquote(line: bytes) -> bytes:
    """``line`` without its quote markers (every level of ``> ``, or a bare ``>`` ending an empty quoted line)."""
    body = line.rstrip(b"\r")
    i = 0
    while body.startswith(b"> ", i):
        i += 2
    if body[i:] == b">":
        i += 1
    return line[i:]


def unwrap(block: bytes, kind: Envelope) -> bytes:
    """``block`` (complete lines, UTF-8) with each envelope line replaced by ``<time> <text>`` (``<text>`` when
    the record has no time); other lines unchanged. Returns UTF-8 bytes ending as ``block`` does."""
    out: list[bytes] = []
    lines = block.split(b"\n")
    last = lines.pop() if not block.endswith(b"\n") else None
    if block.endswith(b"\n"):
        lines.pop()
    for line in lines:
        if kind is Envelope.QUOTE:
            out.append(_unquote(line))
            continue
        if kind is Envelope.CRI:
            m = CRI_LINE.fullmatch(line.rstrip(b"\r"))
            out.append(m.group(1) + b" " + m.group(2) if m else line)
            continue
        got = _json_text(line)
        if got is None:
            out.append(line)
            continue
        text, when = got
        text = text[:-1] if text.endswith("\n") else text
        for part in text.split("\n") or [""]:
            out.append(((when + " ") if when else "").encode() + part.encode("utf-8", "replace"))
    res = b"\n".join(out) + (b"\n" if out else b"")
    if last is not None:
        res += unwrap(last + b"\n", kind)[:-1]
    return res


#: Hard wrapping (a terminal, mail client or forum that broke long lines at a fixed width): the widths it is looked for
#: at, and how many of the sampled lines must be exactly that wide, with none wider.
WRAP_WIDTHS = (60, 512)
WRAP_MIN_LINES = 3
WRAP_MIN_SHARE = 0.05
_DIGITS = re.compile(r"\d")


def sniff_wrap(head: bytes) -> int | None:
    """The width at which a member's lines were hard-wrapped, from its first bytes, or None.

    A hard-wrapped text has no line wider than the width and many lines exactly that wide (each continued on the
    next line): at least :data:`WRAP_MIN_LINES` and :data:`WRAP_MIN_SHARE` of its non-empty lines, the width within
    :data:`WRAP_WIDTHS`, and most of those lines followed by a non-empty one. A log as printed has a few long lines of
    different lengths."""
    got = _head_lines(head, WRAP_MIN_LINES)
    if got is None:
        return None
    lines, sizes, width = got
    at = [i for i, x in enumerate(lines) if len(x) == width]
    if len(at) < max(WRAP_MIN_LINES, WRAP_MIN_SHARE * len(sizes)):
        return None
    continued = sum(1 for i in at if i + 1 < len(lines) and _continues(lines[i], lines[i + 1]))
    return width if continued >= 0.8 * len(at) else None


def _head_lines(head: bytes, min_lines: int) -> tuple[list[str], list[int], int] | None:
    """A member's first complete lines (``\r`` dropped), the lengths of the non-empty ones and the widest, or None when
    fewer than ``min_lines`` are non-empty or the widest is outside :data:`WRAP_WIDTHS`."""
    parts = head.split(b"\n")
    if not head.endswith(b"\n"):
        parts.pop()
    lines = [p.rstrip(b"\r").decode("utf-8", "replace") for p in parts]
    sizes = [len(x) for x in lines if x.strip()]
    if len(sizes) < min_lines:
        return None
    width = max(sizes)
    return (lines, sizes, width) if WRAP_WIDTHS[0] <= width <= WRAP_WIDTHS[1] else None


def _rejoin(block: bytes, carry: Callable[[list[str], int], str | None]) -> bytes:
    """``block`` (complete lines, UTF-8) with each line for which ``carry(lines, i)`` gives a text joined to the next
    line, that text standing for it. Returns UTF-8 bytes ending as ``block`` does; the result has fewer lines."""
    text = block.decode("utf-8", "replace")
    ends = text.endswith("\n")
    lines = text.split("\n")
    if ends:
        lines.pop()
    out: list[str] = []
    pending = ""
    for i, line in enumerate(lines):
        piece = carry(lines, i)
        if piece is not None:
            pending += piece
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return ("\n".join(out) + ("\n" if ends else "")).encode()


def _continues(line: str, nxt: str) -> bool:
    """Whether ``nxt`` reads as the rest of ``line`` cut at the wrap width rather than a line of its own: its first
    character is not a bracket, rule or quote that opens log lines, it does not start as ``line`` does, digits aside
    (lines of one template, e.g. every rank's watchdog report, a trainer's iteration or timed step lines, are alike
    in width and start), and ``line`` stops inside a word or after a space."""
    rest = nxt.lstrip()
    if not rest or rest[0] in "[(<-=#*>|" or _DIGITS.sub("0", nxt[:12]) == _DIGITS.sub("0", line[:12]) \
            or line.endswith("  "):
        return False  # a line start of its own, a line of the same template, or a line padded with blanks
    if line.endswith(".") and nxt[:1].isspace():
        return False  # a sentence that ended, then an indented line (Python's warnings print the source line so)
    return line[-1].isalnum() or line[-1] in " _'\"/\\,:;."


def unwrap_wrapped(block: bytes, width: int) -> bytes:
    """``block`` (complete lines, UTF-8) with every line exactly ``width`` characters wide joined to the next one.
    Returns UTF-8 bytes ending as ``block`` does; the result has fewer lines."""

    def carry(lines: list[str], i: int) -> str | None:
        body = lines[i].rstrip("\r")
        return body if len(body) == width else None

    return _rejoin(block, carry)


#: Soft wrapping (a web page, mail or chat client that broke long lines at spaces, or at a width that varies by a
#: few characters once host and user names were replaced): a line is taken as broken when it is within
#: :data:`SOFT_WRAP_SLACK` characters of the widest line and the next line's first word would not have fitted after
#: it; the member is soft-wrapped when at least :data:`SOFT_WRAP_MIN_BREAKS` lines are broken and they are at least
#: :data:`SOFT_WRAP_MIN_SHARE` of the lines that wide. (Public corpus dev n41b-001: NCCL's "Error / while creating
#: shared memory segment /dev/shm/..." broken at 92 characters; n53a-002, n57b-005: PyTorch's dump-signal and
#: mismatch reports cut mid-word at a width of 208 and 138 give or take a replaced name.)
SOFT_WRAP_SLACK = 25
SOFT_WRAP_MIN_BREAKS = 3
SOFT_WRAP_MIN_SHARE = 0.5
#: the start of a line of its own, never the rest of the line before: a date or clock time, glog's ``E0605 09:26``,
#: NCCL's ``host:pid:tid``, a traceback's header, frame or exception line
_LINE_START = re.compile(
    r"(?:\d{4}[-/]\d\d[-/]\d\d|\d\d:\d\d:\d\d|[IWEF]\d{4} \d\d:|[\w.-]+:\d+:\d+ |Traceback |File \"|"
    r"[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b)")
_FRAME_END = re.compile(r"line \d+, in \S+$")


def _soft_break(line: str, nxt: str, width: int) -> bool:
    """Whether ``line`` was broken by soft wrapping at ``width`` and ``nxt`` is its rest (see :data:`SOFT_WRAP_SLACK`):
    ``line`` near the width, ``nxt``'s first word too long to have fitted after it, ``nxt`` not a line start of its
    own (:func:`_continues`, :data:`_LINE_START`; an indented line only after a line exactly as wide, a terminal's cut
    before a space), ``line`` not a traceback's frame line, and the cut inside a sentence: after a space, before a
    lower-case letter, digit or punctuation, or between two word characters at the full width."""
    body = line.rstrip("\r")
    word = nxt.split(maxsplit=1)
    if not body.strip() or not word or len(body) < width - SOFT_WRAP_SLACK or len(body.rstrip()) + 1 + len(word[0]) <= width:
        return False
    if nxt[:1].isspace() and not (len(body) == width and nxt[1:2] != " "):
        return False
    if _LINE_START.match(nxt) or _FRAME_END.search(body) or not _continues(body, nxt):
        return False
    first = nxt[0]
    return (body[-1] == " " or first.islower() or first.isdigit() or first in ")]}.,:;_-/'\"" or first == " "
            or (body[-1].isalnum() and first.isalnum() and len(body) >= width - 1))


def sniff_soft_wrap(head: bytes) -> int | None:
    """The width at which a member's lines were soft-wrapped (:data:`SOFT_WRAP_SLACK`), from its first bytes, or
    None."""
    got = _head_lines(head, SOFT_WRAP_MIN_BREAKS)
    if got is None:
        return None
    lines, sizes, width = got
    wide = sum(1 for n in sizes if n >= width - 10)
    breaks = sum(1 for a, b in zip(lines, lines[1:], strict=False) if _soft_break(a, b, width))
    return width if breaks >= max(SOFT_WRAP_MIN_BREAKS, SOFT_WRAP_MIN_SHARE * wide) else None


def unwrap_soft(block: bytes, width: int) -> bytes:
    """``block`` (complete lines, UTF-8) with every soft-wrapped line (:func:`_soft_break`) joined to its rest: with
    nothing between them when the line ends in a space or fills the width (a cut inside a word), else with the space
    the wrapping took. A line that is the block's last is not joined. Returns UTF-8 bytes ending as ``block`` does."""

    def carry(lines: list[str], i: int) -> str | None:
        if not _soft_break(lines[i], lines[i + 1] if i + 1 < len(lines) else "", width):
            return None
        body = lines[i].rstrip("\r")
        return body if body.endswith(" ") or len(body) >= width - 1 else body + " "

    return _rejoin(block, carry)


#: Leading whitespace of a line (spaces and tabs).
_INDENT = re.compile(rb"[ \t]*")


def sniff_indent(head: bytes) -> int:
    """The indentation every one of a member's first :data:`SNIFF_LINES` non-empty lines shares (0: none): a log
    pasted as an indented block (Markdown's four-space code block, a reply's indentation), whose prefixes (a
    ``[rankN]:`` or a time at the line's start) are then not at the start. Lines at that indentation must not be
    traceback frames (``File "..."``): a paste that starts inside a traceback keeps its frames' indentation."""
    parts = head.split(b"\n")
    if not head.endswith(b"\n"):
        parts.pop()
    lines = [x.rstrip(b"\r") for x in parts if x.strip()][:SNIFF_LINES]
    if not lines:
        return 0
    width = min(len(_INDENT.match(x).group(0)) for x in lines)  # type: ignore[union-attr]
    if width == 0 or any(x[width:].startswith(b'File "') for x in lines if len(_INDENT.match(x).group(0)) == width):  # type: ignore[union-attr]
        return 0
    return width


def dedent(block: bytes, width: int) -> bytes:
    """``block`` with up to ``width`` leading spaces or tabs removed from each line (a line indented less, or not
    at all, loses only what it has)."""
    return b"\n".join(line[min(width, len(_INDENT.match(line).group(0))):]  # type: ignore[union-attr]
                       for line in block.split(b"\n"))


def unwrapper(head: bytes) -> tuple[Callable[[bytes], bytes] | None, int]:
    """What a member needs, from its first bytes: the function that turns a block of its complete lines into the
    lines as printed (:func:`unwrap` for an envelope, else :func:`unwrap_wrapped` for lines hard-wrapped at one
    width, else :func:`unwrap_soft` for soft-wrapped ones; None for plain lines), and the wrap width (0 when not
    wrapped, for the reader's warning)."""
    indent = sniff_indent(head)
    if indent:  # an indented paste: its lines as printed first, then whatever else they need
        inner, width = unwrapper(dedent(head, indent))
        if inner is None:
            return (lambda block: dedent(block, indent)), width
        return (lambda block: inner(dedent(block, indent))), width
    kind = sniff(head)
    if kind is not None:
        return (lambda block: unwrap(block, kind)), 0
    width = sniff_wrap(head) or 0
    if width:
        return (lambda block: unwrap_wrapped(block, width)), width
    soft = sniff_soft_wrap(head) or 0
    return ((lambda block: unwrap_soft(block, soft)) if soft else None), soft


__all__ = [
    "CRI_LINE",
    "Envelope",
    "dedent",
    "sniff",
    "sniff_indent",
    "sniff_soft_wrap",
    "sniff_wrap",
    "unwrap",
    "unwrap_soft",
    "unwrap_wrapped",
    "unwrapper",
]
