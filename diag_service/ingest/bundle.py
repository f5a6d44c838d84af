"""Open a log bundle (directory, tar/tar.gz/tgz, zip, single file, gzip) and stream its text.

Streaming: files are read in blocks of :attr:`IngestLimits.block_bytes` (4 MiB) cut at line ends,
so memory stays bounded whatever the bundle size. Nothing is extracted to disk.

Bad input never raises out of the iterator, except :class:`BundleError` for a path that does not
exist or cannot be opened at all. Everything else becomes a warning in the report:

- binary members (NUL bytes in their first 8 KiB) are skipped;
- invalid UTF-8 is decoded with U+FFFD replacement and counted;
- CRLF becomes LF, ``\\r`` progress-bar redraws keep only their last segment (what a terminal
  shows), ANSI colour codes are removed;
- a line longer than :attr:`IngestLimits.max_line_bytes` is cut with a ``[truncated N bytes]`` marker;
- archive members with absolute paths or ``..`` are refused (path traversal), as are links and
  devices;
- decompression stops when a member grows past ``max_ratio`` times its compressed size (and more
  than 64 MiB), or the whole bundle past ``max_total_bytes`` (decompression bombs).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO

from diag_service.domain import InputReport
from diag_service.logformat import detect_prefixes

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
CR_REDRAW_RE = re.compile(r"[^\n]*\r")
GZIP_MAGIC = b"\x1f\x8b"


class BundleError(Exception):
    """The bundle cannot be read at all (missing path, unreadable archive, no log lines)."""


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """Bounds that keep ingest safe on hostile input. Sizes in bytes."""

    block_bytes: int = 4 << 20
    max_line_bytes: int = 1 << 20
    max_total_bytes: int = 64 << 30
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 64 << 20
    max_members: int = 200_000
    max_nesting: int = 2


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


@dataclass(slots=True)
class Block:
    """Complete, normalised lines of one source. ``text`` ends with ``\\n``; ``first_line`` is 1-based."""

    source: Source
    text: str
    first_line: int


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
_LOG_EXT = re.compile(r"(?i)(\.(?:log|txt|out|err|stdout|stderr|json|jsonl|dmesg|kern|syslog|messages|console))+(\.gz)?$|\.gz$")


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
            if i + 1 < len(parts) - 1 and parts[i + 1].isdigit():
                src.local_rank = int(parts[i + 1])
    for part in parts:
        stem = _LOG_EXT.sub("", part)
        if not stem:
            continue
        m = _LOCAL_RANK_NAME.search(stem)
        if m and src.local_rank is None:
            src.local_rank = int(m.group(1))
            continue
        m = _RANK_NAME.search(stem)
        if m and src.rank is None:
            src.rank = int(m.group(1))
            continue
        if src.node is None and not stem.isdigit() and not _ATTEMPT.match(stem):
            if _NODE_NAME.match(stem):
                src.node = stem
            else:
                m = _NODE_TOKEN.search(stem)
                if m:
                    src.node = m.group(1)
    if src.layout == "plain" and (src.rank is not None or src.node is not None):
        src.layout = "per_rank_file" if src.rank is not None else "per_node_file"
    return src


# --- byte streams to text blocks ------------------------------------------------------------------


class _Budget:
    """Counts decompressed bytes across the bundle and per member (decompression-bomb guard)."""

    def __init__(self, limits: IngestLimits) -> None:
        self.limits = limits
        self.total = 0

    def exceeded(self, member_bytes: int, compressed: int | None) -> str | None:
        if self.total > self.limits.max_total_bytes:
            return f"bundle exceeds {self.limits.max_total_bytes} decompressed bytes; rest skipped"
        if (
            compressed is not None
            and member_bytes > self.limits.ratio_floor_bytes
            and member_bytes > self.limits.max_ratio * max(compressed, 1)
        ):
            return (
                f"decompression ratio above {self.limits.max_ratio:.0f}x "
                f"({member_bytes} from {compressed} bytes): likely a decompression bomb, member cut"
            )
        return None


def _normalise(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            text = CR_REDRAW_RE.sub("", text)
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if b"\x00" in head[:8192]:
        return True
    sample = head[:8192]
    ctrl = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return ctrl > 0.1 * len(sample)


def _stream_blocks(
    fobj: BinaryIO,
    src: Source,
    report: InputReport,
    budget: _Budget,
    limits: IngestLimits,
    compressed_size: int | None,
) -> Iterator[Block]:
    """Yield blocks of complete lines from a binary stream, applying every input guard."""
    buf = b""
    line_no = 1
    first = True
    skipping_long = False
    truncated = 0
    bad_chars = 0
    member_bytes = 0
    while True:
        try:
            chunk = fobj.read(limits.block_bytes)
        except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile) as exc:
            report.warnings.append(f"{src.path}: read error after {member_bytes} bytes ({exc}); rest skipped")
            chunk = b""
        if first:
            first = False
            if chunk[:2] == GZIP_MAGIC:
                # A gzip member without a .gz name: decompress it transparently.
                inner = gzip.GzipFile(fileobj=_Prepend(chunk, fobj))
                yield from _stream_blocks(inner, src, report, budget, limits, compressed_size)
                return
            if _looks_binary(chunk):
                report.warnings.append(f"{src.path}: binary content, skipped")
                return
        if not chunk:
            break
        member_bytes += len(chunk)
        budget.total += len(chunk)
        report.bytes_read += len(chunk)
        problem = budget.exceeded(member_bytes, compressed_size)
        if problem:
            report.warnings.append(f"{src.path}: {problem}")
            break
        data = buf + chunk if buf else chunk
        cut = data.rfind(b"\n")
        if cut == -1:
            if len(data) > limits.max_line_bytes:
                if not skipping_long:
                    data = data[: limits.max_line_bytes] + b" [truncated: line longer than limit]\n"
                    truncated += 1
                    skipping_long = True
                    buf = b""
                    complete = data
                else:
                    buf = b""
                    continue
            else:
                buf = data
                continue
        else:
            complete, buf = data[: cut + 1], data[cut + 1 :]
            if skipping_long:
                nl = complete.find(b"\n")
                complete = complete[nl + 1 :]
                skipping_long = False
                line_no += 1
                if not complete:
                    continue
            if len(buf) > limits.max_line_bytes:
                complete += buf[: limits.max_line_bytes] + b" [truncated: line longer than limit]\n"
                truncated += 1
                buf = b""
                skipping_long = True
        text = complete.decode("utf-8", errors="replace")
        if "\ufffd" in text:
            bad_chars += text.count("\ufffd")
        text = _normalise(text)
        if not src.prefixes and line_no == 1:
            src.prefixes = detect_prefixes(text[:200_000].split("\n", 400)[:400])
        n_lines = text.count("\n")
        yield Block(source=src, text=text, first_line=line_no)
        line_no += n_lines
    if buf and not skipping_long:
        text = _normalise(buf.decode("utf-8", errors="replace")) + "\n"
        bad_chars += text.count("\ufffd")
        if not src.prefixes and line_no == 1:
            src.prefixes = detect_prefixes(text[:200_000].split("\n", 400)[:400])
        yield Block(source=src, text=text, first_line=line_no)
        line_no += 1
    report.lines += line_no - 1
    if truncated:
        report.warnings.append(f"{src.path}: {truncated} line(s) longer than {limits.max_line_bytes} bytes truncated")
    if bad_chars:
        report.warnings.append(f"{src.path}: {bad_chars} byte sequence(s) not valid UTF-8, replaced")


class _Prepend(io.RawIOBase):
    """A read-only stream that first returns ``head`` and then the rest of ``tail``."""

    def __init__(self, head: bytes, tail: BinaryIO) -> None:
        self.head = head
        self.tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self.head:
            n = min(len(b), len(self.head))
            b[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.tail.read(len(b))
        n = len(data)
        b[:n] = data
        return n


# --- containers -----------------------------------------------------------------------------------


def _is_tar(name: str) -> bool:
    return bool(re.search(r"(?i)\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$", name))


def _safe_member_name(name: str) -> bool:
    p = PurePosixPath(name.replace("\\", "/"))
    return not p.is_absolute() and ".." not in p.parts and not re.match(r"^[A-Za-z]:", name)


def _open_member_stream(
    name: str, fobj: BinaryIO, report: InputReport, budget: _Budget, limits: IngestLimits,
    compressed_size: int | None, depth: int,
) -> Iterator[Block]:
    """Dispatch one member by name: nested archive, gzip, or plain text."""
    report.files += 1
    lower = name.lower()
    if depth < limits.max_nesting and _is_tar(lower):
        try:
            with tarfile.open(fileobj=fobj, mode="r|*") as tf:
                yield from _iter_tar(tf, name + "/", report, budget, limits, depth + 1)
        except (tarfile.TarError, OSError, EOFError) as exc:
            report.warnings.append(f"{name}: unreadable tar archive ({exc}), skipped")
        return
    if depth < limits.max_nesting and lower.endswith(".zip"):
        try:
            data = io.BytesIO(fobj.read(limits.max_total_bytes))
            with zipfile.ZipFile(data) as zf:
                yield from _iter_zip(zf, name + "/", report, budget, limits, depth + 1)
        except (zipfile.BadZipFile, OSError) as exc:
            report.warnings.append(f"{name}: unreadable zip archive ({exc}), skipped")
        return
    src = attribute_path(name[:-3] if lower.endswith(".gz") else name)
    if lower.endswith(".gz"):
        yield from _stream_blocks(gzip.GzipFile(fileobj=fobj), src, report, budget, limits, compressed_size)
    else:
        yield from _stream_blocks(fobj, src, report, budget, limits, compressed_size)


def _iter_tar(
    tf: tarfile.TarFile, prefix: str, report: InputReport, budget: _Budget, limits: IngestLimits, depth: int
) -> Iterator[Block]:
    n = 0
    try:
        for member in tf:
            n += 1
            if n > limits.max_members:
                report.warnings.append(f"{prefix or 'archive'}: more than {limits.max_members} members, rest skipped")
                return
            if not _safe_member_name(member.name):
                report.warnings.append(f"{member.name}: unsafe path in archive (absolute or '..'), refused")
                continue
            if member.isdir():
                continue
            if not member.isfile():
                report.warnings.append(f"{member.name}: link or special file in archive, skipped")
                continue
            fobj = tf.extractfile(member)
            if fobj is None:
                continue
            yield from _open_member_stream(
                prefix + member.name, fobj, report, budget, limits, member.size, depth
            )
    except (tarfile.TarError, OSError, EOFError, zlib_error()) as exc:
        report.warnings.append(f"{prefix or 'archive'}: archive truncated or corrupt ({exc}); rest skipped")


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


def _iter_zip(
    zf: zipfile.ZipFile, prefix: str, report: InputReport, budget: _Budget, limits: IngestLimits, depth: int
) -> Iterator[Block]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        report.warnings.append(f"{prefix or 'archive'}: more than {limits.max_members} members, rest skipped")
        infos = infos[: limits.max_members]
    for info in infos:
        if info.is_dir():
            continue
        if not _safe_member_name(info.filename):
            report.warnings.append(f"{info.filename}: unsafe path in archive (absolute or '..'), refused")
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            report.warnings.append(f"{info.filename}: symbolic link in archive, skipped")
            continue
        if info.file_size > limits.ratio_floor_bytes and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            report.warnings.append(
                f"{info.filename}: declared decompression ratio "
                f"{info.file_size / max(info.compress_size, 1):.0f}x: likely a decompression bomb, skipped"
            )
            continue
        try:
            with zf.open(info) as fobj:
                yield from _open_member_stream(
                    prefix + info.filename, fobj, report, budget, limits, info.compress_size, depth  # type: ignore[arg-type]
                )
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            report.warnings.append(f"{info.filename}: unreadable zip member ({exc}), skipped")


def _iter_dir(root: str, report: InputReport, budget: _Budget, limits: IngestLimits) -> Iterator[Block]:
    real_root = os.path.realpath(root)
    n = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for fname in sorted(filenames):
            full = os.path.join(dirpath, fname)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            n += 1
            if n > limits.max_members:
                report.warnings.append(f"more than {limits.max_members} files, rest skipped")
                return
            if os.path.islink(full):
                target = os.path.realpath(full)
                if not target.startswith(real_root + os.sep):
                    report.warnings.append(f"{rel}: symbolic link leaving the bundle, skipped")
                    continue
            if not os.path.isfile(full):
                continue
            try:
                fobj = open(full, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                report.warnings.append(f"{rel}: unreadable ({exc.strerror or exc}), skipped")
                continue
            with fobj:
                size = os.fstat(fobj.fileno()).st_size
                yield from _open_member_stream(rel, fobj, report, budget, limits, size, 0)


def read_bundle(path: str | os.PathLike[str], report: InputReport, limits: IngestLimits | None = None) -> Iterator[Block]:
    """Stream every text line of a bundle as :class:`Block` objects, in a stable file order.

    ``path``: a directory, a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive, or one log file
    (optionally ``.gz``). Problems are appended to ``report.warnings``; ``report`` also receives
    file, byte and line counts and the layouts seen.

    Raises :class:`BundleError` if ``path`` does not exist or the archive cannot be opened.
    """
    limits = limits or IngestLimits()
    p = os.fspath(path)
    if not os.path.exists(p):
        raise BundleError(f"no such file or directory: {p}")
    budget = _Budget(limits)
    layouts: set[str] = set()

    def _tracked(blocks: Iterator[Block]) -> Iterator[Block]:
        for b in blocks:
            if b.source.layout not in layouts:
                layouts.add(b.source.layout)
            for k in b.source.prefixes:
                layouts.add(f"prefix:{k}")
            yield b
        report.layouts = sorted(layouts)

    if os.path.isdir(p):
        yield from _tracked(_iter_dir(p, report, budget, limits))
        return
    name = os.path.basename(p)
    try:
        fobj = open(p, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise BundleError(f"cannot open {p}: {exc.strerror or exc}") from exc
    with fobj:
        size = os.fstat(fobj.fileno()).st_size
        lower = name.lower()
        if _is_tar(lower) or (not lower.endswith((".gz", ".zip")) and tarfile.is_tarfile(p)):
            try:
                tf = tarfile.open(fileobj=fobj, mode="r|*")  # noqa: SIM115 - closed below
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise BundleError(f"cannot read archive {p}: {exc}") from exc
            with tf:
                yield from _tracked(_iter_tar(tf, "", report, budget, limits, 1))
            return
        if lower.endswith(".zip") or zipfile.is_zipfile(fobj):
            fobj.seek(0)
            try:
                zf = zipfile.ZipFile(fobj)
            except (zipfile.BadZipFile, OSError) as exc:
                raise BundleError(f"cannot read zip archive {p}: {exc}") from exc
            with zf:
                yield from _tracked(_iter_zip(zf, "", report, budget, limits, 1))
            return
        fobj.seek(0)
        yield from _tracked(_open_member_stream(name, fobj, report, budget, limits, size, 0))
