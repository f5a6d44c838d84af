"""Uploaded bundles: streamed to disk under a size limit, inspected before any work is queued.

The inspection is the service's admission check, not a diagnosis: it decompresses the upload once,
streaming, and refuses (:class:`Refused`, a 4xx with a message naming the limit) archives with too
many members, too many decompressed bytes, a decompression ratio of a bomb, unsafe member paths
(absolute, ``..``, links leaving the archive, devices), invalid gzip/zip data, or a line longer than
the limit. Archives inside the upload (up to ``max_nesting`` levels, as ingest opens them) and
gzip-compressed members are inspected too, their members and bytes counted in the same budget; the
bundle's ratio is its decompressed bytes, nested ones included, to the upload's bytes actually read,
and a member's to the compressed bytes read for it. A zip's member count and directory size are checked
from its end record before its directory is parsed. Memory stays bounded: 1 MiB pieces, whatever the size.

What passes is diagnosed by the pipeline, whose ingest applies its own guards as well.
"""

from __future__ import annotations

import bz2
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from diag_service.domain import job_id_from_name as _job_id_from_name
from diag_service.errors import Refused
from diag_service.ingest.archive import (
    GZIP_MAGIC,
    Budget,
    Counting,
    Gunzip,
    Prepend,
    nested_kind,
    read_pieces,
    safe_member_name,
    sniff_kind,
    zip_directory_problem,
)
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


class _Budget:
    """Members, decompressed bytes and per-member ratio of one upload, refusing (:class:`Refused`) at a limit.
    The total and ratio rule is ingest's own (:class:`diag_service.ingest.archive.Budget`), with the
    service's limits; here a breach refuses the upload instead of cutting the member."""

    def __init__(self, limits: UploadLimits, total_compressed: int) -> None:
        self.limits = limits
        self.members = 0
        self.total_compressed = total_compressed
        self._rule = Budget(limits.ingest_limits())

    @property
    def total(self) -> int:
        return self._rule.total

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise Refused(413, f"archive has more than {self.limits.max_members} members (limits.max_members)", "members")
        _check_name(name)

    def counting(self, raw: BinaryIO) -> Counting:
        """``raw`` (the upload file) read through a counter of the bytes actually read (the bundle's ratio)."""
        return Counting(raw, self._rule)

    def add(self, n: int, member_bytes: int, compressed: int, name: str) -> None:
        self._rule.total += n
        problem = self._rule.exceeded(member_bytes, compressed)
        if problem is None:
            return
        if self._rule.bundle_bomb:
            raise Refused(413, f"decompression bomb: {name}: {problem} (limits.max_ratio)", "bomb")
        if self._rule.stopped:
            raise Refused(413, f"bundle unpacks to more than {self.limits.max_unpacked_bytes} bytes "
                               "(limits.max_unpacked_bytes)", "unpacked_size")
        raise Refused(413, f"decompression bomb: {name}: {problem} (limits.max_ratio)", "bomb")


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


def _scan(stream: BinaryIO, name: str, budget: _Budget, compressed: Counting | None,
          member_compressed: int | None = None, whole: bool = False) -> int:
    """Read a member to its end, checking lines, totals and ratio. ``compressed``: counter of the compressed side;
    ``whole``: the member is the whole compressed stream (a .log.gz), so every compressed byte read so far,
    the decoder's read-ahead included, is its own."""
    lines = _Lines(budget.limits.max_line_bytes)
    n = 0
    c0 = 0 if whole or compressed is None else compressed.n
    while True:
        try:
            data = stream.read(_PIECE)
        except (zlib.error, EOFError, OSError, lzma.LZMAError, zipfile.BadZipFile) as exc:
            if _is_gzip(stream):
                raise Refused(422, f"invalid gzip data in {name}: {exc}", "bad_gzip") from None
            raise Refused(422, f"invalid compressed data in {name}: {exc}", "bad_archive") from None
        if not data:
            return n
        n += len(data)
        used = member_compressed if member_compressed is not None else (compressed.n - c0 if compressed else n)
        budget.add(len(data), n, used, name)
        lines.feed(data, name)


def _is_gzip(stream: object) -> bool:
    """Whether ``stream`` is (or reads through) the gzip decoder."""
    return isinstance(stream, Gunzip) or (isinstance(stream, Prepend) and isinstance(stream.tail, Gunzip))


def _sniff(fh: BinaryIO) -> str:
    head = fh.read(512)
    fh.seek(0)
    return sniff_kind(head)


def _tar_members(tf: tarfile.TarFile, counting: Counting, budget: _Budget, level: int = 0, prefix: str = "") -> None:
    """Inspect a streamed tar's members. ``counting``: the upload's compressed side (a member's ratio is
    measured on the upload bytes read for it); ``level``: archives around this one inside the upload."""
    while True:
        try:
            info = tf.next()
        except Refused:
            raise
        except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
            raise Refused(422, f"invalid tar archive: {exc}", "bad_archive") from None
        if info is None:
            return
        budget.member(info.name)
        name = prefix + info.name
        if info.issym() or info.islnk():
            target = info.linkname.replace("\\", "/")
            if target.startswith("/") or ".." in PurePosixPath(target).parts:
                raise Refused(422, f"unsafe link {info.name[:200]!r} -> {target[:200]!r}: refused", "traversal")
            continue
        if info.ischr() or info.isblk() or info.isfifo():
            raise Refused(422, f"device or pipe member {info.name[:200]!r}: refused", "traversal")
        if not info.isfile():
            continue
        f = tf.extractfile(info)
        if f is not None:
            _member(f, name, budget, counting, level)


def _member(f: BinaryIO, name: str, budget: _Budget, counting: Counting, level: int) -> None:
    """Inspect one regular member: a nested archive (up to ``max_nesting`` levels) or a gzip-compressed
    member as ingest will read it, anything else as text."""
    kind = nested_kind(name)
    if kind == "gz":
        head, _ = read_pieces(f, 2)
        if head == GZIP_MAGIC:
            _scan(Gunzip(Prepend(head, f)), name, budget, counting)
            return
        _scan(Prepend(head, f), name, budget, counting)
        return
    if kind is None or level >= budget.limits.max_nesting:
        _scan(f, name, budget, counting)
        return
    if kind == "tar":
        try:
            inner = tarfile.open(fileobj=f, mode="r|*")  # noqa: SIM115 - read to the end below
        except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            raise Refused(422, f"invalid nested tar archive {name[:200]!r}: {exc}", "bad_archive") from None
        with inner:
            _tar_members(inner, counting, budget, level + 1, name + "/")
        return
    with tempfile.SpooledTemporaryFile(max_size=16 << 20) as spool:  # a zip needs random access
        n = 0
        start = counting.n
        while True:
            try:
                piece = f.read(_PIECE)
            except (zlib.error, EOFError, OSError, lzma.LZMAError, zipfile.BadZipFile) as exc:
                raise Refused(422, f"invalid compressed data in {name[:200]}: {exc}", "bad_archive") from None
            if not piece:
                break
            n += len(piece)
            budget.add(len(piece), n, counting.n - start, name)  # the nested zip's bytes count as read
            spool.write(piece)
        spool.seek(0)
        _inspect_zip(Counting(spool), budget, level + 1, name + "/")  # type: ignore[arg-type]


def inspect_bundle(path: Path, limits: UploadLimits) -> BundleInfo:
    """Decompress ``path`` once, streaming, and refuse it (:class:`Refused`) if it breaks a limit.

    Understands tar (plain, gzip, bzip2, xz), zip, a gzip-compressed log and plain text.
    """
    size = path.stat().st_size
    budget = _Budget(limits, size)
    with open(path, "rb") as fh:
        kind = _sniff(fh)
        counting = budget.counting(fh)  # type: ignore[arg-type]
        if kind == "zip":
            _inspect_zip(counting, budget)
            return BundleInfo("zip", budget.members, budget.total, size)
        if kind in ("gz", "bz2", "xz"):
            if kind == "gz":
                inner: BinaryIO = Gunzip(counting)  # type: ignore[assignment]
            else:
                opener = bz2.BZ2File if kind == "bz2" else lzma.LZMAFile
                inner = opener(counting)  # type: ignore[arg-type]
            try:
                head, error = read_pieces(inner, 512)
            except lzma.LZMAError as exc:
                head, error = b"", exc
            if error is not None:  # admission refuses damage that ingest would salvage around
                what = "gzip" if kind == "gz" else kind
                raise Refused(422, f"invalid {what} data in {path.name}: {error}",
                              "bad_gzip" if kind == "gz" else "bad_archive") from None
            if len(head) >= 262 and head[257:262] == b"ustar":
                tf = tarfile.open(fileobj=Prepend(head, inner), mode="r|")  # noqa: SIM115 - read to the end below
                _tar_members(tf, counting, budget)
                return BundleInfo(f"tar.{kind}", budget.members, budget.total, size)
            budget.member(path.name)
            _scan(Prepend(head, inner), path.name, budget, counting, whole=True)
            return BundleInfo("gz" if kind == "gz" else "log", budget.members, budget.total, size)
        if kind == "tar":
            try:
                tf = tarfile.open(fileobj=counting, mode="r|")  # type: ignore[call-overload]  # noqa: SIM115
            except tarfile.TarError as exc:
                raise Refused(422, f"invalid tar archive: {exc}", "bad_archive") from None
            _tar_members(tf, counting, budget)
            return BundleInfo("tar", budget.members, budget.total, size)
        budget.member(path.name)
        _scan(counting, path.name, budget, None)
        return BundleInfo("log", budget.members, budget.total, size)


def _inspect_zip(fh: Counting, budget: _Budget, level: int = 0, prefix: str = "") -> None:
    """Inspect a zip read through ``fh`` (seekable; it counts the compressed bytes read). The member count
    and directory size are checked from the end record first (:func:`zip_directory_problem`); a member's
    ratio is measured on the compressed bytes read for it, whatever its header declares."""
    try:
        problem = zip_directory_problem(fh, budget.limits.max_members - budget.members)  # type: ignore[arg-type]
    except OSError as exc:
        raise Refused(422, f"invalid zip archive: {exc}", "bad_archive") from None
    if problem:
        raise Refused(413, f"{prefix}{problem} (limits.max_members)", "members")
    try:
        zf = zipfile.ZipFile(fh)  # type: ignore[arg-type]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise Refused(422, f"invalid zip archive: {exc}", "bad_archive") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > budget.limits.max_members:
            raise Refused(413, f"archive has more than {budget.limits.max_members} members (limits.max_members)", "members")
        for info in infos:
            budget.member(info.filename)
            if info.is_dir():
                continue
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:  # a symbolic link stored in the zip
                raise Refused(422, f"link member {info.filename[:200]!r}: refused", "traversal")
            try:
                with zf.open(info) as f:
                    _member(f, prefix + info.filename, budget, fh, level)  # type: ignore[arg-type]
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError, zlib.error) as exc:
                raise Refused(422, f"invalid zip member {info.filename[:200]!r}: {exc}", "bad_archive") from None


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
