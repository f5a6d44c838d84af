"""Open a log bundle (directory, tar/tar.gz/tgz, zip, single file, gzip) and stream its text.

Streaming: files are read in blocks of :attr:`~diag_service.limits.BundleLimits.block_bytes` (4 MiB) cut at line ends,
so memory stays bounded whatever the bundle size. Nothing is extracted to disk (one exception: a
zip nested in a streamed tar needs random access and is spooled, to disk above 64 MiB).

Bad input never raises out of the iterator, except :class:`BundleError` for a path that does not
exist or cannot be opened at all. Everything else becomes a warning in the report:

- members that are source code by their name (:data:`SOURCE_CODE`: ``train.py``, ``kernel.cu``) are skipped: a
  program's lines name the errors and completions it may print, they are not its output;
- binary members (NUL bytes above :data:`BINARY_NUL_SHARE`, or many control characters other than ESC, in their
  first 8 KiB) are skipped; a text member's stray NUL bytes are removed, with a warning;
- invalid UTF-8 is decoded with U+FFFD replacement and counted;
- a member written by a container runtime or a log shipper (CRI ``<time> stderr F <text>`` lines, Docker
  ``json-file`` or other JSON-lines records) is unwrapped to ``<time> <text>`` lines, a Markdown quote loses its
  ``> ``, a paste indented as a block loses the indentation its lines share, and hard-wrapped lines are joined,
  with a warning (:mod:`diag_service.ingest.envelope`);
- CRLF (and CR CR LF) becomes LF, ``\\r`` progress-bar redraws keep only their last segment (what a
  terminal shows; a tqdm bar with text written right after it is dropped), ANSI colour codes are
  removed;
- a line longer than :attr:`~diag_service.limits.BundleLimits.max_line_bytes` is cut with a
  ``[truncated: line longer than limit]`` marker, at a UTF-8 character boundary;
- a truncated or corrupt gzip file or archive keeps what could be read before the damage;
- a ``.gz`` file that is not gzip-compressed is read as plain text;
- archive members with absolute paths or ``..`` are refused (path traversal), as are links and
  devices; unreadable files and directories, and broken symbolic links, are skipped; the walk of
  folders and archives, and what it does on each problem, is :mod:`diag_service.ingest.walk`'s
  (salvage policy);
- decompression stops when a member grows past ``max_ratio`` times its compressed size (and more
  than ``ratio_floor_bytes``), when the whole bundle's decompressed bytes (nested archives' members
  and spooled nested zips included) grow past ``max_ratio`` times the bytes actually read from the
  input (same floor), or past ``max_total_bytes`` (decompression bombs); for a streamed tar or a zip
  the compressed size is what the member consumed of the archive;
- a zip whose end record declares more than ``max_members`` entries, or whose central directory is
  larger than that many entries take, is not opened (:func:`~diag_service.ingest.archive.zip_directory_problem`);
- a folder's files are opened with :func:`~diag_service.fsutil.open_regular` (a link leaving the
  folder, a device or a pipe is skipped with a warning, also when swapped in after the listing).
"""

from __future__ import annotations

import lzma
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO

from diag_service.domain import InputReport
from diag_service.ingest.archive import (
    TAR_NAME,
    Budget,
    Compressed,
    Counting,
    Prepend,
    gzip_holds_tar,
    read_pieces,
    read_pieces_into,
    sniff_kind,
)
from diag_service.ingest.envelope import unwrapper
from diag_service.ingest.walk import BundleError, Policy, Walker
from diag_service.limits import BundleLimits
from diag_service.logformat import UNAMBIGUOUS_KINDS, detect_prefixes

#: The bounds of a bundle walk (one model, :class:`diag_service.limits.BundleLimits`; the old name stays).
IngestLimits = BundleLimits

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
CRLF_RE = re.compile(r"\r+\n")
CR_REDRAW_RE = re.compile(r"[^\n]*\r([^\n]*)")
#: A tqdm progress bar's last redraw (``12172/13725 [4:44:35<35:03,  1.35s/it, loss=0.97]``, tqdm's
#: ``{n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]``) with the next log record written right after it, no newline
#: between (tqdm leaves the cursor at the bar's end; a logger or a traceback on the same stream starts there): a
#: traceback's header or a Python logging record (``WARNING:torch...``, transformers' ``[WARNING|logging.py:328]``) is
#: where its line begins, so its level and its traceback are read. (A c10d or NCCL report glued to a bar stays glued: the
#: bar on its line is what the catalogue reads as a dataset pass still running when a collective timed out.) Public
#: corpus: 80 logs hold a record glued to a bar (dev n65b-005: torchelastic's keep-alive WARNING read as an error line).
GLUED_BAR_RE = re.compile(
    rb"(\d+/\d+ \[[\d:]+<[\d:?]+,(?:[^\]\[\n]|\[[^\]\[\n]{0,80}\]){0,200}\])"
    rb"(?=Traceback \(most recent call last\)|(?:WARNING|ERROR|INFO|CRITICAL|DEBUG)[:|]"
    rb"|\[(?:WARNING|ERROR|INFO|CRITICAL)[|:])")
# A tqdm bar (``desc: 45%|####      | 225/500 [01:23<01:42,  2.69it/s, loss=2.31]``) with more text
# right after it: an exception or log line written while the bar was on screen, without a newline.
PROGRESS_BAR_RE = re.compile(r"(?:[^\n|]{0,120}: )?\s*\d{1,3}%\|[^|\n]{0,200}\|[^\[\n]{0,60}\[[^\]\n]{0,200}\](?=\S)")


@dataclass(slots=True)
class Source:
    """One file of the bundle and what its path says about who wrote it."""

    path: str
    layout: str = "plain"
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    attempt: int | None = None
    prefixes: frozenset[str] = field(default_factory=frozenset)


class Block:
    """Complete, normalised lines of one source. ``text`` ends with ``\\n``; ``first_line`` is 1-based;
    ``newlines`` is ``text.count("\\n")`` when the reader counted it, ``data`` ``text`` as UTF-8 when the reader
    read exactly those bytes (None: not known).

    A block read from ASCII bytes that needed no normalising is made from its bytes alone (``text`` None):
    ``text`` is then decoded on first use and kept, and :attr:`ascii` is True, so a reader that can work on
    ``data`` (the extractor: byte and character offsets agree) never decodes the whole block."""

    __slots__ = ("source", "_text", "first_line", "newlines", "data", "ascii")

    def __init__(
        self, source: Source, text: str | None = None, first_line: int = 1, newlines: int | None = None,
        data: bytes | None = None, ascii: bool = False,
    ) -> None:
        if text is None and data is None:
            raise ValueError("a Block needs its text or its bytes")
        self.source = source
        self._text = text
        self.first_line = first_line
        self.newlines = newlines
        self.data = data
        #: ``data`` is set and ASCII (``text == data.decode("ascii")``)
        self.ascii = ascii

    @property
    def text(self) -> str:
        if self._text is None:
            assert self.data is not None
            self._text = self.data.decode("ascii")
        return self._text

    def __repr__(self) -> str:
        return f"Block(source={self.source!r}, first_line={self.first_line}, bytes={len(self.data or b'')}, ascii={self.ascii})"


# --- path attribution -----------------------------------------------------------------------------

_ATTEMPT = re.compile(r"^attempt_(\d+)$")
_RANK_NAME = re.compile(r"(?i)(?:^|[^a-z])(?:global_?)?rank[-_]?(\d{1,6})(?:\D|$)")
_LOCAL_RANK_NAME = re.compile(r"(?i)local_?rank[-_]?(\d{1,6})")
_NODE_NAME = re.compile(
    r"(?i)^(?:.*-(?:master|worker|launcher)-\d+"
    r"|(?:node|host|worker|machine|pod|server)[-_]?(?:rank[-_]?)?\d+"
    r"|(?=.*(?:node|host|gpu|worker|compute|server|machine|pod|ip-\d))[a-z][a-z0-9]*(?:-[a-z0-9]+)*-?\d+"
    r"(?:\.[a-z0-9.-]+)?)$"
)
_NODE_TOKEN = re.compile(r"(?i)(?:^|[_.-])((?:node|host|worker)[-_]?\d+)(?:$|[_.-])")
#: A folder that names a rank is all rank (``rank3/``, ``rank_3_logs/``, ``global_rank-3/``): a rank token inside a
#: longer folder name (``r07_allreduce_size_mismatch_rank2/``, a case's or a run's own name, the top folder of a
#: ``tar czf`` of it) describes the bundle, not the files in it (trial 37: every file of such a tarball read as rank 2).
_RANK_DIR = re.compile(r"(?i)^(?:global_?)?rank[-_]?(\d{1,6})(?:[-_.](?:logs?|out|output|dir))?$")
_LOG_EXT = re.compile(r"(?i)(\.(?:log|txt|out|err|stdout|stderr|json|jsonl|dmesg|kern|syslog|messages|console))+(\.gz)?$|\.gz$")
_ARCHIVE_EXT = re.compile(r"(?i)\.(?:tar(?:\.(?:gz|bz2|xz))?|tgz|tbz2|txz|zip)$")


def attribute_path(path: str) -> Source:
    """Read rank, local rank, node and torchrun attempt from a member path.

    torchrun ``--log-dir`` trees are ``<run_id>/attempt_<N>/<local_rank>/{stdout,stderr}.log``
    (torch.distributed.elastic.multiprocessing ``DefaultLogsSpecs``): the number under
    ``attempt_N`` is the *local* rank. File or folder names such as ``rank-3.log``,
    ``worker-2.log``, ``pytorchjob-worker-1`` or ``gpu-node-040.log`` name a rank or a node.
    """
    src = Source(path=path)
    parts = PurePosixPath(path).parts
    for i, part in enumerate(parts):
        m = _ATTEMPT.match(part)
        if m:
            src.attempt = int(m.group(1))
            src.layout = "torchrun_logdir"
            if i + 1 < len(parts) - 1 and parts[i + 1].isascii() and parts[i + 1].isdigit() and len(parts[i + 1]) <= 6:
                src.local_rank = int(parts[i + 1])
    last = len(parts) - 1
    for i, part in enumerate(parts):
        stem = _LOG_EXT.sub("", _ARCHIVE_EXT.sub("", part))  # node0.tar.gz/... names node0
        if not stem:
            continue
        folder = i < last and not _ARCHIVE_EXT.search(part)  # (an archive's own name is read as a file's)
        m = _LOCAL_RANK_NAME.search(stem)
        if m and src.local_rank is None and (not folder or m.group(0) == stem):
            src.local_rank = int(m.group(1))
            continue
        m = _RANK_DIR.match(stem) if folder else _RANK_NAME.search(stem)
        if m and src.rank is None:
            src.rank = int(m.group(1))
            continue
        if src.node is None and not stem.isdigit() and not _ATTEMPT.match(stem):
            if _NODE_NAME.match(stem):
                src.node = stem
            elif folder:
                continue  # a node token inside a longer folder name is the bundle's own name (see _RANK_DIR)
            else:
                m = _NODE_TOKEN.search(stem)
                if m:
                    src.node = m.group(1)
                else:
                    # a host name after an underscore (``dmesg_hpc-gpu042.txt``, ``syslog_gpu-node-007``): a
                    # token with a hyphen, so that a device index (``stderr_gpu3``) is not read as a node
                    for tok in reversed(stem.split("_")[1:]):
                        if "-" in tok and _NODE_NAME.match(tok):
                            src.node = tok
                            break
    if src.layout == "plain" and (src.rank is not None or src.node is not None):
        src.layout = "per_rank_file" if src.rank is not None else "per_node_file"
    return src


# --- byte streams to text blocks ------------------------------------------------------------------

_TRUNC_MARK = b" [truncated: line longer than limit]"




def _utf8_cut(data: bytes, n: int) -> int:
    """A cut position at or just before ``n`` (< ``len(data)``) that does not split a UTF-8 character."""
    k = n
    while k > 0 and n - k < 3 and 0x80 <= data[k] < 0xC0:
        k -= 1
    return k


def _cut_long_lines(data: bytes, limit: int) -> tuple[bytes, int]:
    """Cut every line of ``data`` (complete lines, ending with a newline) longer than ``limit`` bytes.

    Finds them without splitting the block into lines: a line longer than ``limit`` contains a
    whole window of ``limit // 2`` bytes without a newline, and only such windows are examined.
    """
    if len(data) <= limit:
        return data, 0
    step = max(limit // 2, 1)
    parts: list[bytes] = []
    done = n = 0
    k = 0
    end_data = len(data)
    while k < end_data:
        if data.find(b"\n", k, k + step) != -1:
            k += step
            continue
        start = data.rfind(b"\n", 0, k) + 1
        end = data.find(b"\n", k)
        if end == -1:
            end = end_data
        if end - start > limit:
            parts += [data[done : start + _utf8_cut(data[start:end], limit)], _TRUNC_MARK]
            done = end
            n += 1
        k = end + 1
    if not n:
        return data, 0
    parts.append(data[done:])
    return b"".join(parts), n


def _last_segment(m: re.Match[str]) -> str:
    """What a terminal shows of a line redrawn with ``\\r``: its last segment, without a progress bar
    that the text after it was written over."""
    seg = m.group(1)
    bar = PROGRESS_BAR_RE.match(seg)
    return seg[bar.end() :] if bar else seg


def _normalise(text: str, redraws: bool = False) -> str:
    if "\r" in text:
        text = CRLF_RE.sub("\n", text)
        if "\r" in text and not redraws:
            text = CR_REDRAW_RE.sub(_last_segment, text)
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text


_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27))


_NL_CHUNK = 256 << 10


def _newlines(text: str, data: bytes | None) -> int:
    """``text.count("\\n")``. With ``data``, ``text`` as UTF-8 (where a 0x0A byte is always a newline), a
    large block is counted by numpy's vectorised compare: 9.2 GB/s against 3.6 for ``str.count`` on a 4 MiB
    console block (this machine, quiet). The compare writes into one 256 KiB array reused along the block: a fresh 4 MiB
    result per block was page-faulted in every time and cost three times the compare (one array per call:
    the service diagnoses in several threads)."""
    if data is None:
        return text.count("\n")
    if len(data) < 1 << 16:
        return data.count(b"\n")
    import numpy as np  # a core dependency; imported here, not by every `diag` command that loads this module

    scratch = np.empty(min(_NL_CHUNK, len(data)), dtype=bool)
    arr = np.frombuffer(data, dtype=np.uint8)
    n = 0
    for i in range(0, len(arr), _NL_CHUNK):
        part = arr[i : i + _NL_CHUNK]
        out = scratch[: len(part)]
        np.equal(part, 10, out=out)
        n += int(np.count_nonzero(out))
    return n


#: At least this share of NUL bytes in a member's first 8 KiB makes it binary. Random or compressed bytes hold one
#: in 256 (0.39 %), executables and images far more; a text log holds a stray one (PyTorch's DataLoader bus-error
#: message is written with its terminating NUL, and a rank's stderr.log holding it must not be skipped whole).
BINARY_NUL_SHARE = 0.002


def _drop_nuls(data: bytes) -> tuple[bytes, int]:
    """``data`` without its NUL bytes, and how many there were."""
    n = data.count(b"\x00")
    return (data.replace(b"\x00", b""), n) if n else (data, 0)


def _looks_binary(head: bytes) -> bool:
    """Many NUL bytes (:data:`BINARY_NUL_SHARE`), or many control characters, in the first 8 KiB. ESC does not count:
    colour codes."""
    if not head:
        return False
    sample = head[:8192]
    if sample.count(b"\x00") > BINARY_NUL_SHARE * len(sample):
        return True
    ctrl = len(sample) - len(sample.translate(None, _CONTROL))
    return ctrl > 0.1 * len(sample)


#: This tool's own reports, saved beside the logs they read (``diag diagnose DIR > DIR/report.txt``): the text report's
#: panel (``diagnosis: <job>``; ``diag hang``'s ``HUNG``/``not hung``/``undecided``), ``diag slow``'s first line, and the JSON
#: forms (``schema_version`` first; ``diag hang --json``'s ``hung``/``snapshots``). Read as logs they would quote the
#: previous answer's evidence and explanation back as new events (a new user's trial 32: a saved report turned a
#: KeyError into a "corrupt checkpoint"). Also the live agent's own log (``diag watch --log-file``: ``[diag watch] ...``
#: lines; trial 33: its "DIAG_AGENT_TOKEN is not set" line made a clean run a failure).
_OWN_REPORT = re.compile(
    rb"\A\s*(?:\xe2\x95\xad(?:\xe2\x94\x80)+ (?:diagnosis: |HUNG  \d+ ranks, |not hung  \d+ ranks, |undecided  \d+ ranks, )"
    rb"|(?:FAIL-SLOW  category: |MINOR  a slowdown too small to act on |NOT JUDGED  too few steps for a baseline|"
    rb"OK  no slowdown and no straggler)"
    rb"|\{\s*\"(?:schema_version\": \"\d+\.\d+\",\s*\"(?:job_id|failure_mode)\"|hung\": (?:true|false),\s*\"snapshots\"))")
#: A line of the live agent's own log file (``diag watch --log-file``: ``%(asctime)s [diag watch] %(message)s``).
_AGENT_LINE = re.compile(rb"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} )?\[diag watch\] ")


def _own_report(head: bytes) -> bool:
    """Whether a member's first bytes are one of this tool's own reports (:data:`_OWN_REPORT`), or the live agent's
    log: every whole line of the first 4 KiB one of its lines (:data:`_AGENT_LINE`; a console the agent's messages
    are mixed into holds the job's lines too, and is read: the extractor passes over the agent's lines there)."""
    head = head[:4096]
    if _OWN_REPORT.match(head) is not None:
        return True
    lines = head.split(b"\n")
    if len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    return bool(lines[0]) and all(_AGENT_LINE.match(ln) is not None for ln in lines if ln.strip())


# A line that may start with a Slurm task label (``3: ``) or a host prefix (``gpu-node-040: ``).
_PREFIX_PROBE = re.compile(r"\n(?:[ \t]{0,5}\d{1,6}: |(?=[A-Za-z0-9.-]*[0-9-])[A-Za-z0-9][A-Za-z0-9.-]{0,62}: )")
#: The same over ASCII bytes (the same matches: the classes and ``\\d`` differ from the text pattern's only
#: on non-ASCII characters)
_PREFIX_PROBE_BYTES = re.compile(_PREFIX_PROBE.pattern.encode())


class _PrefixSniffer:
    """Find the line-prefix kinds of one file, also after a long unprefixed preamble.

    A Slurm or pdsh job's output often starts with what the batch script printed itself
    (``nvidia-smi``, ``pip list``, ``env``), without labels, and only then the labelled output of the
    tasks. The first 400 lines are sampled; while they show no ambiguous prefix kind (task label or
    host), further 400-line windows are sampled where :data:`_PREFIX_PROBE` finds a candidate line,
    at most :attr:`MAX_WINDOWS` windows within the first :attr:`MAX_CHARS` characters of the file.
    Unambiguous kinds (``[rankN]:``, ``[defaultN]:``) are collected on the way; they are applied
    to every line anyway (:func:`diag_service.logformat.attribute`). A file whose lines mostly start
    with one of those is decided at once: a task label or host would come before it.
    """

    WINDOW = 400
    MAX_WINDOWS = 16
    MAX_CHARS = 4 << 20

    __slots__ = ("src", "windows", "seen", "done")

    def __init__(self, src: Source) -> None:
        self.src = src
        self.windows = 0
        self.seen = 0
        self.done = False

    def _window(self, text: str | bytes, start: int) -> int:
        """Sample the window at ``start``; return where it ends."""
        seg = text[start : start + 200_000]
        if isinstance(seg, bytes):
            seg = seg.decode("ascii")
        parts = seg.split("\n", self.WINDOW)
        lines = parts[: self.WINDOW]
        self.windows += 1
        kinds = detect_prefixes(lines)
        if kinds:
            self.src.prefixes = self.src.prefixes | kinds
        if kinds - UNAMBIGUOUS_KINDS:
            self.done = True
        elif kinds:
            non_empty = [x for x in lines if x]
            if sum(x.startswith("[") for x in non_empty) >= 0.5 * len(non_empty):
                self.done = True
        return start + len(seg) - (len(parts[-1]) if len(parts) > self.WINDOW else 0)

    def feed(self, text: str | bytes) -> None:
        """Sample the next block of the file: its text, or its bytes when they are ASCII (the same offsets)."""
        if self.done:
            return
        pos = 0
        if self.windows == 0:
            pos = self._window(text, 0)
        limit = min(len(text), self.MAX_CHARS - self.seen)
        probe = _PREFIX_PROBE_BYTES if isinstance(text, bytes) else _PREFIX_PROBE
        while not self.done and self.windows < self.MAX_WINDOWS and pos < limit:
            m = probe.search(text, max(pos - 1, 0), limit)  # type: ignore[call-overload]
            if m is None:
                break
            pos = self._window(text, m.start() + 1)
        self.seen += len(text)
        if self.windows >= self.MAX_WINDOWS or self.seen >= self.MAX_CHARS:
            self.done = True


def _stream_blocks(
    walker: Walker[Block], src: Source, fobj: BinaryIO, compressed: Compressed, area: bytearray | None = None,
    redraws: bool = False,
) -> Iterator[Block]:
    """Yield blocks of complete lines from a member's decompressed stream, applying every text guard;
    bytes are counted in ``walker``'s budget (its limits cut the member). ``area``: a read buffer of
    ``block_bytes`` shared by the members of one walk, which are read one after another (default: a new one).
    ``redraws``: keep ``\r`` progress-bar redraws inside their line (see :func:`read_bundle`)."""
    limits, report, budget = walker.limits, walker.report, walker.budget
    max_line = limits.max_line_bytes
    buf = b""  # the incomplete last line of what was read so far
    line_no = 1
    skipping_long = False  # inside a line already cut (and counted): drop it up to its newline
    truncated = bad_chars = member_bytes = nuls = glued = 0
    blank = True  # only whitespace so far: such a member holds no log line (counted as no lines, with a warning)
    sniffer = _PrefixSniffer(src)
    first = True
    # turns the member's lines into the lines as printed: an envelope, a quote or hard wrapping undone (None: plain)
    undo: Callable[[bytes], bytes] | None = None
    # one read buffer per member, filled in place (read_pieces_into): a block's bytes are copied once, into
    # the block, instead of once per stream layer, per piece join and per cut
    if area is None or len(area) != limits.block_bytes:
        area = bytearray(limits.block_bytes)
    view = memoryview(area)
    while True:
        got, error = read_pieces_into(fobj, view)
        chunk = view[:got]
        if first:
            first = False
            if not got and error is None:
                report.warnings.append(f"{src.path}: empty (0 bytes)")
                return
            if bytes(chunk[:2]) in (b"\xff\xfe", b"\xfe\xff"):
                # a UTF-16 byte-order mark: text (Windows PowerShell's ">" writes UTF-16LE), not binary, but every
                # other byte is NUL to a UTF-8 reader; said so, with the conversion, rather than "binary"
                report.warnings.append(f"{src.path}: UTF-16 text (byte-order mark), skipped: convert it with "
                                       "`iconv -f UTF-16 -t UTF-8`")
                return
            if _looks_binary(bytes(chunk[:8192])):
                report.warnings.append(f"{src.path}: binary content, skipped")
                return
            if _own_report(bytes(chunk[:4096])):
                report.warnings.append(f"{src.path}: a report of this tool's (diag diagnose, hang or slow) or its "
                                       "agent's log (diag watch), not a job's log: skipped")
                return
            undo, wrap = unwrapper(bytes(chunk[:65536]))
            if wrap:
                report.warnings.append(f"{src.path}: lines hard-wrapped at {wrap} characters were joined (line "
                                       "numbers count the joined lines)")
        if got:
            member_bytes += got
            report.bytes_read += got
            if walker.count(src.path, got, member_bytes, compressed):
                break
            cut = area.rfind(b"\n", 0, got)
            if skipping_long or cut == -1:
                data = buf + bytes(chunk)
                if skipping_long:
                    nl = data.find(b"\n")
                    data = b"" if nl == -1 else data[nl + 1 :]
                    skipping_long = nl == -1
                cut = data.rfind(b"\n")
                complete, buf = data[: cut + 1], data[cut + 1 :]
            else:  # the usual case: the lines before the chunk's last newline, in one copy
                complete = b"".join((buf, chunk[: cut + 1])) if buf else bytes(chunk[: cut + 1])
                buf = bytes(chunk[cut + 1 :])
            if complete and b"\x00" in complete:  # stray NUL bytes of a text member: dropped, counted
                complete, n_nul = _drop_nuls(complete)
                nuls += n_nul
            if complete:
                complete, n_cut = _cut_long_lines(complete, max_line)
                truncated += n_cut
                if undo is not None:
                    complete = undo(complete)
                if b"<" in complete and (b"it/s" in complete or b"s/it" in complete):
                    complete, n_glued = GLUED_BAR_RE.subn(rb"\1\n", complete)
                    glued += n_glued
            if len(buf) > max_line:
                complete += buf[: _utf8_cut(buf, max_line)] + _TRUNC_MARK + b"\n"
                truncated += 1
                buf = b""
                skipping_long = True
            if blank and complete and not complete.isspace():  # isspace stops at the first other byte
                blank = False
            if complete and complete.isascii() and b"\r" not in complete and b"\x1b" not in complete:
                # nothing to replace or normalise: the bytes are the text, decoded only where it is read
                sniffer.feed(complete)
                n_lines = _newlines("", complete)
                yield Block(source=src, first_line=line_no, newlines=n_lines, data=complete, ascii=True)
                line_no += n_lines
            elif complete:
                decoded = complete.decode("utf-8", errors="replace")
                # the bytes are the text's UTF-8 when nothing was replaced (valid UTF-8 round-trips) or normalised
                exact = "\ufffd" not in decoded
                if not exact:
                    bad_chars += decoded.count("\ufffd")
                text = _normalise(decoded, redraws)
                sniffer.feed(text)
                raw = complete if exact and text is decoded else None
                n_lines = _newlines(text, raw)
                yield Block(source=src, text=text, first_line=line_no, newlines=n_lines, data=raw)
                line_no += n_lines
        if error is not None:
            walker.read_error(src.path, fobj, error, member_bytes)
            break
        if not got:
            break
    if buf and b"\x00" in buf:
        buf, n_nul = _drop_nuls(buf)
        nuls += n_nul
    if buf and not skipping_long:
        if blank and not buf.isspace():
            blank = False
        if undo is not None:
            buf = undo(buf + b"\n")[:-1]
        text = _normalise(buf.decode("utf-8", errors="replace"), redraws) + "\n"
        bad_chars += text.count("\ufffd")
        sniffer.feed(text)
        yield Block(source=src, text=text, first_line=line_no)
        line_no += 1
    if blank and line_no > 1:
        report.warnings.append(f"{src.path}: blank ({line_no - 1} line(s) of whitespace only)")
    elif not budget.captured(src.path):
        report.lines += line_no - 1
    if truncated:
        report.warnings.append(f"{src.path}: {truncated} line(s) longer than {max_line} bytes truncated")
    if glued:
        report.warnings.append(f"{src.path}: {glued} log line(s) written right after a progress bar were split from it "
                               "(line numbers count the split lines)")
    if bad_chars:
        report.warnings.append(f"{src.path}: {bad_chars} byte sequence(s) not valid UTF-8, replaced")
    if nuls:
        report.warnings.append(f"{src.path}: {nuls} NUL byte(s) removed")


# --- containers -----------------------------------------------------------------------------------


def _is_tar(name: str) -> bool:
    return bool(TAR_NAME.search(name))


#: Members that are programs rather than output, by name: Python, C/C++/CUDA and Rust/Go sources.
SOURCE_CODE = re.compile(r"\.(?:py|pyx|pyi|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go)$", re.IGNORECASE)
#: Prose documents by their name (Markdown, reStructuredText, AsciiDoc): the notes, ticket text or README a person
#: puts beside a run's logs. Inside a folder or an archive they are skipped; a prose file given itself is read (a
#: thread saved as ``issue.md``).
PROSE = re.compile(r"\.(?:md|markdown|rst|adoc)$", re.IGNORECASE)


def read_bundle(
    path: str | os.PathLike[str], report: InputReport, limits: IngestLimits | None = None,
    skip: Callable[[str], bool] | None = None, capture: Callable[[str], bool] | None = None,
    raw: Callable[[str], bool] | None = None, on_raw: Callable[[str, bytes, str | None], None] | None = None,
    redraws: bool = False,
) -> Iterator[Block]:
    """Stream every text line of a bundle as :class:`Block` objects, in a stable file order.

    ``path``: a directory, a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive, or one log file
    (optionally ``.gz``). Problems are appended to ``report.warnings``; ``report`` also receives
    file, byte and line counts and the layouts seen. ``skip(member_name)``: members (bundle-relative
    names, nested ones as ``archive.tar.gz/inner.log``) for which it is True are not opened, counted or
    warned about. ``capture(member_name)``: members that are read (with every guard) but are not logs
    (stack dumps, timing feeds for other analyzers): their blocks are yielded, their files and lines
    are not counted in ``report``. ``raw(member_name)``: archive members handed whole to
    ``on_raw(name, data, read_error)`` instead (binary dumps; folders' files are read by their analyzers).
    ``redraws``: keep a line's ``\r`` progress-bar redraws (every tqdm update, for the step-time reader)
    instead of only what a terminal shows; line numbers are the same either way (only ``\n`` ends a line).

    Raises :class:`BundleError` if ``path`` does not exist or the archive cannot be opened.
    """
    limits = limits or IngestLimits()
    p = os.fspath(path)
    if not os.path.exists(p):
        raise BundleError(f"no such file or directory: {p}")
    layouts: set[str] = set()
    area: list[bytearray] = []
    direct = False  # one plain file given itself (not a folder or an archive): read whatever its name

    def leaf(name: str, fobj: BinaryIO, compressed: Compressed) -> Iterator[Block]:
        inner = name[:-3] if name.lower().endswith(".gz") else name
        if SOURCE_CODE.search(inner):
            # the job's own program in the bundle: its lines are code, not output (a `raise ...` or a log call's
            # format string would read as the error or the completion it only names)
            report.warnings.append(f"{name}: source code, not a log: skipped")
            return iter(())
        if PROSE.search(inner) and not direct:
            # notes or ticket text beside the logs: their words quote errors (an issue's title, a summary of what
            # happened) that would read as the run's own evidence
            report.warnings.append(f"{name}: a prose document (notes), not a log: skipped (pass the file itself to "
                                   "read it)")
            return iter(())
        src = attribute_path(inner)
        src.path = name  # evidence names the member as it is in the bundle, ``.gz`` included
        if not area:
            area.append(bytearray(walker.limits.block_bytes))  # allocated (and zeroed) once per walk
        return _stream_blocks(walker, src, fobj, compressed, area[0], redraws)

    walker: Walker[Block] = Walker(limits, Policy.SALVAGE, report, leaf, Budget(limits, skip, capture, raw, on_raw))

    def _tracked(blocks: Iterator[Block]) -> Iterator[Block]:
        for b in blocks:
            if b.source.layout not in layouts:
                layouts.add(b.source.layout)
            for k in b.source.prefixes:
                layouts.add(f"prefix:{k}")
            yield b
        report.layouts = sorted(layouts)

    if os.path.isdir(p):
        yield from _tracked(walker.directory(p))
        return
    name = os.path.basename(p)
    try:
        fobj = open(p, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise BundleError(f"cannot open {p}: {exc.strerror or exc}") from exc
    with fobj:
        st = os.fstat(fobj.fileno())
        lower = name.lower()
        counted = Counting(fobj, walker.budget)  # type: ignore[arg-type]  # the input's own bytes: the bundle's ratio
        stream: BinaryIO = counted  # type: ignore[assignment]
        if stat.S_ISREG(st.st_mode):
            is_tar = _is_tar(lower) or (not lower.endswith((".gz", ".zip")) and _looks_like_tar(p))
            is_zip = not is_tar and (lower.endswith(".zip") or zipfile.is_zipfile(fobj))
            fobj.seek(0)
        else:  # a pipe or a device (``tar cz logs | diag diagnose /dev/stdin``): no seeking, so sniff
            head, _ = read_pieces(counted, 1024)  # type: ignore[arg-type]
            stream = Prepend(head, counted)  # type: ignore[assignment,arg-type]
            kind = _stream_kind(head)
            is_tar, is_zip = kind == "tar", kind == "zip"
        if is_tar:
            yield from _tracked(walker.tar(stream, "", 0, top=p))
        elif is_zip:
            yield from _tracked(walker.zip(stream, "", 0, top=p))
        else:
            direct = True
            yield from _tracked(walker.member(name, stream, st.st_size or None, 0))


def _looks_like_tar(path: str) -> bool:
    """:func:`tarfile.is_tarfile`, False instead of an error for a damaged compressed file (a log named
    ``.log`` that starts with a truncated gzip stream raised ``EOFError`` out of it)."""
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError, tarfile.TarError, zlib.error, lzma.LZMAError, ValueError):
        return False


def _stream_kind(head: bytes) -> str:
    """``tar``, ``zip`` or ``text`` from the first bytes of a stream that cannot be rewound
    (:func:`~diag_service.ingest.archive.sniff_kind`; bzip2 and xz streams are taken for tars, which
    ``tarfile`` decompresses, a gzip stream when it holds a tar header)."""
    kind = sniff_kind(head)
    if kind in ("tar", "bz2", "xz") or (kind == "gz" and gzip_holds_tar(head)):
        return "tar"
    return "zip" if kind == "zip" else "text"
