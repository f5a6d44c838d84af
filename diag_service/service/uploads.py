"""Uploaded bundles: streamed to disk under a size limit, inspected before any work is queued.

The inspection is the service's admission check, not a diagnosis: it decompresses the upload once,
streaming, with ingest's own walker (:class:`~diag_service.ingest.walk.Walker`) under the refuse policy,
and refuses (:class:`Refused`, a 4xx with a message naming the limit) archives with too many members,
too many decompressed bytes, a decompression ratio of a bomb, unsafe member paths (absolute, ``..``,
links leaving the archive, devices), invalid gzip/zip data (the policy table of
:mod:`diag_service.ingest.walk`), or a line longer than ``max_line_bytes``. It inspects exactly what
ingest reads: nested archives up to ``max_nesting`` levels and gzip members, in the same budget. Memory
stays bounded: 1 MiB pieces, whatever the size.

What passes is diagnosed by the pipeline, whose ingest applies its own guards as well.
"""

from __future__ import annotations

import bz2
import lzma
import os
import re
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from diag_service.domain import InputReport
from diag_service.domain import job_id_from_name as _job_id_from_name
from diag_service.errors import Refused
from diag_service.ingest.archive import Compressed, Counting, gzip_holds_tar, read_pieces, safe_member_name, sniff_kind
from diag_service.ingest.walk import Policy, Walker
from diag_service.service.faults import DiskFull, disk_full_message, is_disk_full
from diag_service.service.settings import UploadLimits

_PIECE = 1 << 20
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")




@dataclass
class BundleInfo:
    """What the inspection saw. ``kind``: ``tar``, ``tar.gz``, ``tar.bz2``, ``tar.xz``, ``zip``, ``gz``, ``log``."""

    kind: str
    members: int
    unpacked_bytes: int
    compressed_bytes: int


def safe_filename(name: str | None, default: str = "bundle") -> str:
    """The base name of a client-given file name, reduced to ``[A-Za-z0-9._-]`` (at most 100 characters)."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    base = _SAFE_NAME.sub("_", base).strip("._")[:100]
    return base or default


def job_id_from_name(name: str) -> str:
    """A job id from a client-given file name (:func:`diag_service.domain.job_id_from_name` of its safe
    base name; ``upload`` if nothing is left)."""
    return _job_id_from_name(safe_filename(name), default="upload")


def with_extension(name: str, kind: str) -> str:
    """``name`` with the extension that ingest needs to recognise ``kind`` (a ``.tar.gz`` saved as ``logs`` etc.)."""
    lower = name.lower()
    want = {"tar": (".tar",), "tar.gz": (".tar.gz", ".tgz"), "tar.bz2": (".tar.bz2", ".tbz2"), "tar.xz": (".tar.xz", ".txz"),
            "zip": (".zip",), "gz": (".gz",)}.get(kind)
    if want is None:  # plain text: a trailing archive-like extension would mislead ingest
        return re.sub(r"(?i)\.(tar|tgz|zip|gz|bz2|xz)$", ".log", name) if lower.endswith((".tar", ".tgz", ".zip", ".gz",
                                                                                          ".bz2", ".xz")) else name
    if lower.endswith(want):
        return name
    return f"{name}.{kind}"


async def save_stream(chunks: AsyncIterator[bytes], dest: Path, max_bytes: int) -> int:
    """Write an async byte stream to ``dest``, refusing (413) past ``max_bytes``. Returns the size.

    The partial file is removed on refusal or error; a full disk raises
    :class:`~diag_service.service.faults.DiskFull`. The caller bounds the time between chunks.
    """
    n = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(dest, "wb") as fh:
            async for chunk in chunks:
                if not chunk:
                    continue
                n += len(chunk)
                if n > max_bytes:
                    raise Refused(413, f"upload larger than the limit of {max_bytes} bytes (limits.max_upload_bytes)",
                                  "upload_size")
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as exc:
        dest.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFull(disk_full_message("the upload")) from exc
        raise
    return n


def _check_name(name: str) -> None:
    if not safe_member_name(name):
        raise Refused(422, f"unsafe member path {name[:200]!r} (absolute or with '..'): refused", "traversal")


class _Lines:
    """Longest-line check over a byte stream, in O(1) memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.cur = 0
        self.line = 1

    def feed(self, data: bytes, name: str) -> None:
        first = data.find(b"\n")
        if first == -1:
            self.cur += len(data)
        else:
            if self.cur + first > self.limit:
                self._refuse(name)
            self.line += data.count(b"\n")
            self.cur = len(data) - data.rfind(b"\n") - 1
            if len(data) > self.limit:  # an interior line may be long only when a piece exceeds the limit
                for part in data.split(b"\n")[1:-1]:
                    if len(part) > self.limit:
                        self._refuse(name)
        if self.cur > self.limit:
            self._refuse(name)

    def _refuse(self, name: str) -> None:
        raise Refused(413, f"{name}: a line near line {self.line} is longer than {self.limit} bytes (limits.max_line_bytes)",
                      "line_length")


def _scanner(limits: UploadLimits) -> Callable[[Walker[None], str, BinaryIO, Compressed], Iterator[None]]:
    """The admission's leaf: read a member's decompressed bytes to the end, in pieces, counting them in the
    walk's budget and checking the longest line (``limits.max_line_bytes``)."""

    def scan(walker: Walker[None], name: str, stream: BinaryIO, compressed: Compressed) -> Iterator[None]:
        lines = _Lines(limits.max_line_bytes)
        n = 0
        while True:
            try:
                data = stream.read(_PIECE)
            except (zlib.error, EOFError, OSError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError) as exc:
                walker.read_error(name, stream, exc, n)
                return iter(())
            if not data:
                return iter(())
            n += len(data)
            walker.count(name, len(data), n, compressed)
            lines.feed(data, name)

    return scan


def _sniff(path: Path) -> str:
    """The upload's kind (:class:`BundleInfo`) from its first bytes (:func:`sniff_kind`), and for a
    compressed file from the first 512 bytes it decompresses to (a tar header, or not). A bzip2 or xz
    file whose start cannot be decompressed is refused here (422); damaged gzip data is refused by the walk."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
        kind = sniff_kind(head)
        if kind == "gz":
            return "tar.gz" if gzip_holds_tar(head) else "gz"
        if kind not in ("bz2", "xz"):
            return kind
        fh.seek(0)
        inner: BinaryIO = (bz2.BZ2File if kind == "bz2" else lzma.LZMAFile)(fh)  # type: ignore[assignment]
        try:
            inner_head, error = read_pieces(inner, 512)
        except lzma.LZMAError as exc:
            inner_head, error = b"", exc
    if error is not None:  # admission refuses damage that ingest would salvage around
        raise Refused(422, f"invalid {kind} data in {path.name}: {error}", "bad_archive")
    return f"tar.{kind}" if inner_head[257:262] == b"ustar" else kind


def inspect_bundle(path: Path, limits: UploadLimits) -> BundleInfo:
    """Decompress ``path`` once, streaming, and refuse it (:class:`Refused`) if it breaks a limit.

    Understands tar (plain, gzip, bzip2, xz), zip, a gzip-compressed log and plain text. The walk is
    ingest's own (:class:`~diag_service.ingest.walk.Walker`, refuse policy), with the service's limits.
    """
    size = path.stat().st_size
    scan = _scanner(limits)
    walker: Walker[None] = Walker(limits.ingest_limits(), Policy.REFUSE, InputReport(path=path.name),
                                  lambda name, stream, compressed: scan(walker, name, stream, compressed))
    kind = _sniff(path)
    with open(path, "rb") as fh:
        counting = Counting(fh, walker.budget)  # type: ignore[arg-type]  # the upload's bytes: the bundle's ratio
        if kind.startswith("tar"):
            members: Iterator[None] = walker.tar(counting, "", 0, top=path.name)  # type: ignore[arg-type]
        elif kind == "zip":
            members = walker.zip(counting, "", 0, top=path.name)  # type: ignore[arg-type]
        else:
            walker.budget.member()
            if kind in ("bz2", "xz"):  # a compressed log (not a tar)
                opener = bz2.BZ2File if kind == "bz2" else lzma.LZMAFile
                members = walker.leaf(path.name, opener(counting), lambda: counting.n)  # type: ignore[arg-type]
                kind = "log"
            else:
                members = walker.gunzipped(path.name, counting, size)  # type: ignore[arg-type]
        for _ in members:
            pass
    return BundleInfo(kind, walker.budget.members, walker.budget.total, size)


def extract_bundle(path: Path, dest: Path, limits: UploadLimits) -> Path:
    """Inspect, then unpack an archive into ``dest`` (for analyzers that need a folder: stack dumps).

    A single file is placed in ``dest`` as is. Links and special files are not extracted. Returns
    ``dest``, or its only top-level folder when the archive wraps everything in one.
    """
    info = inspect_bundle(path, limits)
    dest.mkdir(parents=True, exist_ok=True)
    if info.kind.startswith("tar"):
        with tarfile.open(path, mode="r:*") as tf:
            members = [m for m in tf.getmembers() if m.isfile() or m.isdir()]
            tf.extractall(dest, members=members, filter="data")
    elif info.kind == "zip":
        with zipfile.ZipFile(path) as zf:
            for zi in zf.infolist():
                _check_name(zi.filename)
                zf.extract(zi, dest)
    else:
        shutil.copyfile(path, dest / path.name)
    tops = [p for p in dest.iterdir() if not p.name.startswith(".")]
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else dest


def resolve_allowed(path: str, roots: list[Path]) -> Path:
    """The real path of ``path`` if it is under one of ``roots``; else :class:`Refused` (403 outside, 404 missing).

    Relative paths are taken relative to the first root. Symbolic links are resolved first, so a link
    inside a root that points outside it is refused.
    """
    if not roots:
        raise Refused(403, "path requests are disabled: no allowed root is configured (allowed_roots)", "path_disabled")
    if not path or "\x00" in path or len(path) > 4096:
        raise Refused(422, "path must be a non-empty string without NUL, at most 4096 characters", "bad_path")
    raw = Path(path).expanduser()
    cand = raw if raw.is_absolute() else roots[0] / raw
    real = Path(os.path.realpath(cand))
    for root in roots:
        if real == root or root in real.parents:
            if not real.exists():
                raise Refused(404, f"no such file or directory under the allowed root: {path}", "path_missing")
            return real
    raise Refused(403, f"path {path!r} is outside the allowed roots", "path_outside")
