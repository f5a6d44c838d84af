"""The one walker of bundles: folders, tar and zip archives (nested ones too), gzip members.

Ingest (:func:`diag_service.ingest.bundle.read_bundle`) and the service's admission check
(:func:`diag_service.service.uploads.inspect_bundle`) both walk a bundle with a :class:`Walker`. It
counts members and decompressed bytes in one :class:`~diag_service.ingest.archive.Budget`, checks
member names and types, opens nested archives and gzip members, and hands every member's decompressed
byte stream to the caller's *leaf* (ingest: the text guards that yield blocks; admission: the line
check). What it does on a problem is the walk's :class:`Policy`, one table for both:

=====================================================  ===========================  ==========================
problem                                                ``SALVAGE`` (ingest)         ``REFUSE`` (admission)
=====================================================  ===========================  ==========================
member path absolute or with ``..``                    member skipped, warning      422 ``traversal``
link leaving the archive; device or pipe member        member skipped, warning      422 ``traversal``
link inside the archive (tar)                          member skipped, warning      member skipped
symbolic link stored in a zip                          member skipped, warning      422 ``traversal``
more than ``max_members`` members (nested included)    rest skipped, warning        413 ``members``
zip directory larger than ``max_members`` allow        archive skipped, warning     413 ``members``
member ratio above ``max_ratio`` (past the floor)      member cut, warning          413 ``bomb``
bundle ratio above ``max_ratio`` (past the floor)      rest skipped, warning        413 ``bomb``
more than ``max_total_bytes`` decompressed             rest skipped, warning        413 ``unpacked_size``
truncated or corrupt gzip member                       what was read kept, warning  422 ``bad_gzip``
truncated or corrupt tar, zip or nested archive        what was read kept, warning  422 ``bad_archive``
archive nested deeper than ``max_nesting``             not opened, warning          not opened
``.gz`` member that is not gzip-compressed             read as plain text, warning  read as plain text
=====================================================  ===========================  ==========================

A tar is truncated or corrupt also when its members stop at a header that cannot be parsed or before its
end-of-archive blocks (``tarfile`` ends the member list there without a word).

Salvage keeps a diagnosis possible from whatever is readable (a bad member among good ones, a truncated
archive); refusal keeps an untrusted upload from costing the service more than its limits before any
work is queued. The bundle's own archive that cannot be opened at all is :class:`BundleError` in
salvage mode, 422 ``bad_archive`` in refuse mode.

Nesting: the members of the bundle's own archive, or of its folder, are at level 0; an archive member
at level ``L`` is opened when ``L < max_nesting`` and its members are at ``L + 1`` (default 1: a zip
inside the job's ``.tar.gz``, or inside its folder, is read; an archive inside that one is not).
"""

from __future__ import annotations

import io
import lzma
import os
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, BinaryIO, Generic, TypeVar

from diag_service.domain import InputReport
from diag_service.errors import DiagError, ErrorKind, Refused
from diag_service.fsutil import UnsafePathError, open_regular
from diag_service.ingest.archive import (
    GZIP_MAGIC,
    MAX_RAW_BYTES,
    READ_PIECE,
    Budget,
    Compressed,
    Counting,
    Gunzip,
    Prepend,
    nested_kind,
    read_pieces,
    safe_member_name,
    zip_directory_problem,
)

if TYPE_CHECKING:
    from diag_service.limits import BundleLimits

T = TypeVar("T")

#: A member's reader: ``(member name, decompressed stream, compressed size or counter) -> items``.
Leaf = Callable[[str, BinaryIO, Compressed], Iterator[T]]

#: gzip layers opened around one member (a ``.gz`` of a gzip stream); more are read as they are.
MAX_GZIP_LAYERS = 2


class Policy(StrEnum):
    """What a walk does on a problem (the table in the module docstring)."""

    SALVAGE = "salvage"
    REFUSE = "refuse"


class BundleError(DiagError):
    """The bundle cannot be read at all (missing path, unreadable archive, no log lines)."""

    kind = ErrorKind.INPUT


#: HTTP status and refusal reason of each problem code in refuse mode.
REFUSALS: dict[str, tuple[int, str]] = {
    "traversal": (422, "traversal"),
    "members": (413, "members"),
    "bomb": (413, "bomb"),
    "unpacked_size": (413, "unpacked_size"),
    "bad_gzip": (422, "bad_gzip"),
    "bad_archive": (422, "bad_archive"),
    "line_length": (413, "line_length"),
}


class _ZipTooLarge(DiagError, OSError):
    """A zip's directory declares more members than the bundle may still have (or is too large); caught
    by the walker, which applies its policy (an ``OSError`` for the readers that only know those)."""

    kind = ErrorKind.INPUT


class Walker(Generic[T]):
    """One walk over one bundle: ``limits``, the ``policy``, the ``report`` that receives warnings (and,
    in salvage mode, file counts), the ``budget`` shared by every archive of the bundle, and the
    ``leaf`` that reads each member's decompressed bytes (it calls :meth:`count` per piece)."""

    def __init__(self, limits: BundleLimits, policy: Policy, report: InputReport, leaf: Leaf[T],
                 budget: Budget | None = None) -> None:
        self.limits = limits
        self.policy = policy
        self.report = report
        self.leaf = leaf
        self.budget = budget or Budget(limits)

    # --- the policy ---------------------------------------------------------------------------------

    def problem(self, code: str, warning: str, refusal: str | None = None) -> None:
        """Salvage: append ``warning`` to the report. Refuse: raise :class:`Refused` with the status and
        reason of ``code`` (:data:`REFUSALS`) and ``refusal`` (default: ``warning``)."""
        if self.policy is Policy.REFUSE:
            status, reason = REFUSALS[code]
            raise Refused(status, refusal or warning, reason)
        self.report.warnings.append(warning)

    def count(self, name: str, n: int, member_bytes: int, compressed: Compressed) -> bool:
        """Count ``n`` more decompressed bytes of member ``name`` (``member_bytes`` so far, ``compressed``
        its compressed size or counter). True when a limit is passed: salvage warns and the leaf stops
        reading the member; refuse raises."""
        found = self._over(name, n, member_bytes, compressed)
        if found is None:
            return False
        self.report.warnings.append(f"{name}: {found}")
        return True

    def _over(self, name: str, n: int, member_bytes: int, compressed: Compressed) -> str | None:
        """What limit the ``n`` more bytes pass, or None; refuse mode raises instead of returning it."""
        budget = self.budget
        budget.total += n
        found = budget.exceeded(member_bytes, compressed)
        if found is None or self.policy is Policy.SALVAGE:
            return found
        if budget.stopped and not budget.bundle_bomb:
            self.problem("unpacked_size", found,
                         f"bundle unpacks to more than {self.limits.max_total_bytes} bytes (limits.max_unpacked_bytes)")
        self.problem("bomb", found, f"decompression bomb: {name}: {found} (limits.max_ratio)")
        return found

    def read_error(self, name: str, stream: BinaryIO, exc: BaseException, member_bytes: int) -> None:
        """A member's stream failed after ``member_bytes`` bytes: salvage keeps them and warns; refuse
        raises (``bad_gzip`` for a gzip stream, else ``bad_archive``)."""
        gz = _is_gzip(stream)
        self.problem("bad_gzip" if gz else "bad_archive",
                     f"{name}: read error after {member_bytes} bytes ({exc}); rest skipped",
                     f"invalid gzip data in {name[:200]}: {exc}" if gz else
                     f"invalid compressed data in {name[:200]}: {exc}")

    def _member(self, prefix: str, unit: str = "members") -> bool:
        if self.budget.member():
            return True
        where = f"{prefix}: " if prefix else ("" if unit == "files" else "archive: ")
        self.problem("members", f"{where}more than {self.limits.max_members} {unit}, rest skipped",
                     f"archive has more than {self.limits.max_members} members (limits.max_members)")
        return False

    # --- members ------------------------------------------------------------------------------------

    def member(self, name: str, fobj: BinaryIO, compressed: Compressed, level: int) -> Iterator[T]:
        """One member: skipped, handed whole to the raw reader, opened as an archive (below
        ``max_nesting``), gunzipped, or read by the leaf."""
        budget, report = self.budget, self.report
        if budget.skip is not None and budget.skip(name):
            return
        if budget.raw is not None and budget.on_raw is not None and budget.raw(name):
            data, error = read_pieces(fobj, MAX_RAW_BYTES + 1)
            budget.total += len(data)
            report.bytes_read += len(data)
            if len(data) > MAX_RAW_BYTES:
                report.warnings.append(f"{name}: larger than {MAX_RAW_BYTES} bytes, not read")
                return
            if self.count(name, 0, len(data), compressed):
                return
            budget.on_raw(name, data, None if error is None else str(error))
            return
        if not budget.captured(name):
            report.files += 1
        kind = nested_kind(name)
        if kind in ("tar", "zip"):
            if level >= self.limits.max_nesting:
                report.warnings.append(f"{name}: archive nested deeper than {self.limits.max_nesting} level(s), "
                                       "not opened")
                return
            if kind == "tar":
                yield from self.tar(fobj, name + "/", level + 1)
            else:
                yield from self.zip(fobj, name + "/", level + 1, compressed)
            return
        yield from self.gunzipped(name, fobj, compressed)

    def gunzipped(self, name: str, fobj: BinaryIO, compressed: Compressed) -> Iterator[T]:
        """The leaf on ``fobj`` decompressed: a ``.gz`` name or gzip magic opens a gzip stream (up to
        :data:`MAX_GZIP_LAYERS`; its compressed counter is what the decoder consumed); a ``.gz`` that is
        not gzip is read as plain text, with a warning."""
        stream: BinaryIO = fobj
        for layer in range(MAX_GZIP_LAYERS):
            head, error = read_pieces(stream, 2)
            # a read error is kept for the leaf, after the bytes read before it
            stream = Prepend(head, stream if error is None else _Broken(error, stream))  # type: ignore[assignment]
            if error is not None:
                break
            if head != GZIP_MAGIC:
                if layer == 0 and head and name.lower().endswith(".gz"):
                    self.report.warnings.append(f"{name}: not gzip-compressed despite its name, read as plain text")
                break
            gz = Gunzip(stream)
            stream, compressed = gz, gz.consumed_bytes  # type: ignore[assignment]
        yield from self.leaf(name, stream, compressed)

    # --- archives -----------------------------------------------------------------------------------

    def tar(self, fobj: BinaryIO, prefix: str, level: int, top: str | None = None) -> Iterator[T]:
        """The members of a streamed tar (any compression ``tarfile`` reads) at ``level``. ``top``: the
        bundle's own archive, named in the :class:`BundleError` when it cannot be opened at all."""
        counting = Counting(fobj)  # the archive's compressed bytes: a member's ratio
        try:
            tf = tarfile.open(fileobj=counting, mode="r|*")  # type: ignore[call-overload]  # noqa: SIM115
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            if top is not None and self.policy is Policy.SALVAGE:
                raise BundleError(f"cannot read archive {top}: {exc}") from exc
            name = prefix.rstrip("/")
            self.problem("bad_archive", f"{name}: unreadable tar archive ({exc}), skipped",
                         f"invalid tar archive: {exc}" if top is not None else
                         f"invalid nested tar archive {name[:200]!r}: {exc}")
            return
        with tf:
            yield from self._tar_members(tf, counting, prefix if top is None else "", level)

    def _tar_members(self, tf: tarfile.TarFile, counting: Counting, prefix: str, level: int) -> Iterator[T]:
        try:
            for member in tf:
                if self.budget.stopped:
                    return
                name = prefix + member.name
                if not self._member(prefix):
                    return
                if not safe_member_name(member.name):
                    self.problem("traversal", f"{name}: unsafe path in archive (absolute or '..'), refused",
                                 f"unsafe member path {member.name[:200]!r} (absolute or with '..'): refused")
                    continue
                if member.isdir():
                    continue
                if not member.isfile():
                    self._tar_special(member, name)
                    continue
                fobj = _tar_member(tf, member)
                if fobj is None:
                    continue
                start, bombs = counting.n, self.budget.bombs
                yield from self.member(name, fobj, lambda start=start: counting.n - start, level)
                if self.budget.bombs > bombs:
                    # Reaching the next member of a stream means inflating the rest of this one.
                    self.report.warnings.append(
                        f"{prefix or 'archive'}: rest of the archive skipped after a decompression bomb")
                    return
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            self.problem("bad_archive", f"{prefix or 'archive'}: archive truncated or corrupt ({exc}); rest skipped",
                         f"invalid tar archive: {exc}")
            return
        early = _ended_early(tf)
        if early:
            self.problem("bad_archive", f"{prefix or 'archive'}: {early}; rest skipped", f"invalid tar archive: {early}")

    def _tar_special(self, member: tarfile.TarInfo, name: str) -> None:
        """A link, device or pipe in a tar: never followed nor read."""
        warning = f"{name}: link or special file in archive, skipped"
        if member.issym() or member.islnk():
            target = member.linkname.replace("\\", "/")
            if target.startswith("/") or ".." in PurePosixPath(target).parts:
                self.problem("traversal", warning, f"unsafe link {member.name[:200]!r} -> {target[:200]!r}: refused")
                return
        elif member.ischr() or member.isblk() or member.isfifo():
            self.problem("traversal", warning, f"device or pipe member {member.name[:200]!r}: refused")
            return
        self.report.warnings.append(warning)

    def zip(self, fobj: BinaryIO, prefix: str, level: int, compressed: Compressed = None,
            top: str | None = None) -> Iterator[T]:
        """The members of a zip at ``level`` (``fobj`` itself when it is a file on disk, else a spooled
        copy). ``compressed``: the zip member's own compressed counter, when it is nested."""
        name = prefix.rstrip("/")
        try:
            with self._random_access(fobj, name, compressed) as seekable, zipfile.ZipFile(seekable) as zf:
                yield from self._zip_members(zf, prefix if top is None else "", level, seekable)
        except _ZipTooLarge as exc:
            if top is not None and self.policy is Policy.SALVAGE:
                raise BundleError(f"cannot read zip archive {top}: {exc}") from exc
            self.problem("members", f"{name}: unreadable zip archive ({exc}), skipped",
                         f"{'' if top is not None else prefix}{exc} (limits.max_members)")
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            if top is not None and self.policy is Policy.SALVAGE:
                raise BundleError(f"cannot read zip archive {top}: {exc}") from exc
            self.problem("bad_archive", f"{name}: unreadable zip archive ({exc}), skipped",
                         f"invalid zip archive: {exc}")

    def _zip_members(self, zf: zipfile.ZipFile, prefix: str, level: int, counting: BinaryIO) -> Iterator[T]:
        """A member's ratio is measured on the compressed bytes read for it when ``counting`` is a
        :class:`Counting` reader, else on the size its header declares."""
        limits = self.limits
        for info in zf.infolist():
            if self.budget.stopped:
                return
            if not self._member(prefix):
                return
            name = prefix + info.filename
            if info.is_dir():
                continue
            if not safe_member_name(info.filename):
                self.problem("traversal", f"{name}: unsafe path in archive (absolute or '..'), refused",
                             f"unsafe member path {info.filename[:200]!r} (absolute or with '..'): refused")
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                self.problem("traversal", f"{name}: symbolic link in archive, skipped",
                             f"link member {info.filename[:200]!r}: refused")
                continue
            if info.file_size > limits.ratio_floor_bytes and info.file_size > limits.max_ratio * max(info.compress_size, 1):
                ratio = info.file_size / max(info.compress_size, 1)
                self.budget.bombs += 1
                self.problem("bomb", f"{name}: declared decompression ratio {ratio:.0f}x: likely a decompression "
                                     "bomb, skipped",
                             f"decompression bomb: {name}: declared decompression ratio {ratio:.0f}x "
                             f"(limits.max_ratio)")
                continue
            compressed: Compressed = info.compress_size
            if isinstance(counting, Counting):
                start = counting.n
                compressed = lambda start=start: counting.n - start  # noqa: E731
            try:
                with zf.open(info) as fobj:
                    yield from self.member(name, fobj, compressed, level)  # type: ignore[arg-type]
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, zlib.error) as exc:
                self.problem("bad_archive", f"{name}: unreadable zip member ({exc}), skipped",
                             f"invalid zip member {info.filename[:200]!r}: {exc}")

    @contextmanager
    def _random_access(self, fobj: BinaryIO, name: str, compressed: Compressed) -> Iterator[BinaryIO]:
        """``fobj`` itself if it is a file on disk, else a copy spooled to memory (to disk above 64
        MiB): a zip needs random access, which a member of a streamed tar does not have. The copy's
        bytes count in the budget (decompressed bytes of the outer archive), and the zip's central
        directory is checked before :class:`zipfile.ZipFile` parses it (:func:`zip_directory_problem`)."""
        limits, budget = self.limits, self.budget
        left = limits.max_members - budget.members  # members the bundle may still have

        def too_many(found: str | None) -> None:
            if found:
                if left < limits.max_members:
                    found += f"; {limits.max_members - left} of the bundle's {limits.max_members} already met"
                raise _ZipTooLarge(found)

        if _real_file(fobj):
            too_many(zip_directory_problem(fobj, left))
            yield fobj
            return
        with tempfile.SpooledTemporaryFile(max_size=64 << 20) as tmp:
            n = 0
            while True:
                piece = fobj.read(READ_PIECE)
                if not piece:
                    break
                tmp.write(piece)
                n += len(piece)
                found = self._over(name, len(piece), n, compressed)
                if found:
                    raise OSError(found)
            tmp.seek(0)
            too_many(zip_directory_problem(tmp, left))  # type: ignore[arg-type]
            yield Counting(tmp)  # type: ignore[arg-type,misc]  # its members' ratio: the compressed bytes read

    # --- folders ------------------------------------------------------------------------------------

    def directory(self, root: str) -> Iterator[T]:
        """The files of a folder, in name order; links leaving it, devices, pipes and unreadable files
        and folders are skipped with a warning (salvage only: admission never walks a folder)."""
        report = self.report
        real_root = os.path.realpath(root)

        def walk_error(exc: OSError) -> None:
            where = os.path.relpath(exc.filename, root).replace(os.sep, "/") if exc.filename else root
            report.warnings.append(f"{where}: unreadable directory ({exc.strerror or exc}), skipped")

        for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error, followlinks=False):
            dirnames.sort()
            for fname in sorted(filenames):
                if self.budget.stopped:
                    return
                full = os.path.join(dirpath, fname)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                if not self._member("", "files"):
                    return
                if os.path.islink(full):
                    target = os.path.realpath(full)
                    if not target.startswith(real_root + os.sep):
                        report.warnings.append(f"{rel}: symbolic link leaving the bundle, skipped")
                        continue
                    if not os.path.exists(full):
                        report.warnings.append(f"{rel}: broken symbolic link, skipped")
                        continue
                if not os.path.isfile(full):
                    # a pipe, device or socket (a link to one inside the bundle too): said, as in an archive
                    report.warnings.append(f"{rel}: not a regular file (a pipe, device or socket), skipped")
                    continue
                try:
                    # checked again as it is opened: a file swapped for a link leaving the bundle, or for a
                    # device or pipe, after the checks above is refused, not read
                    fobj = open_regular(full, real_root)
                except UnsafePathError as exc:
                    report.warnings.append(f"{rel}: {str(exc).split(': ', 1)[-1]}, skipped")
                    continue
                except OSError as exc:
                    report.warnings.append(f"{rel}: unreadable ({exc.strerror or exc}), skipped")
                    continue
                with fobj:
                    size = os.fstat(fobj.fileno()).st_size
                    counted = Counting(fobj, self.budget)  # type: ignore[arg-type]
                    yield from self.member(rel, counted, size, 0)  # type: ignore[arg-type]


class _Broken(io.RawIOBase):
    """A stream whose first read raises ``error`` (a read error found while sniffing ``source``, kept for
    the leaf)."""

    def __init__(self, error: BaseException, source: BinaryIO) -> None:
        self.error: BaseException | None = error
        self.source = source

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self.error is None:
            return 0
        error, self.error = self.error, None
        raise error


class _TarMember(io.RawIOBase):
    """A regular member of a streamed tar, read straight from the archive stream.

    ``TarFile.extractfile`` raises when the archive ends inside the member and drops the whole read
    (for a small member, all of it); this returns what is there, then raises :class:`OSError`.
    """

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self.stream = stream
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self.left <= 0:
            return 0
        data = self.stream.read(min(len(b), self.left))
        if not data:
            self.left = 0
            raise OSError("the archive ends inside this member (truncated archive)")
        self.left -= len(data)
        b[: len(data)] = data
        return len(data)


def _tar_member(tf: tarfile.TarFile, member: tarfile.TarInfo) -> BinaryIO | None:
    stream = tf.fileobj
    try:
        direct = member.isreg() and not member.issparse() and stream is not None and stream.tell() == member.offset_data
    except (AttributeError, OSError, ValueError):
        direct = False
    if direct:
        return _TarMember(stream, member.size)  # type: ignore[arg-type]
    return tf.extractfile(member)


def _ended_early(tf: tarfile.TarFile) -> str | None:
    """Why a streamed tar whose members ran out did not reach its end, or None. ``tarfile`` stops without
    a word at a header it cannot parse after the first member, and at the end of the data: a real end is a
    zero block followed by zeros to the end of its 10 KiB record (``tarfile.RECORDSIZE``; an archive
    appended to it starts on a record boundary)."""
    stream = tf.fileobj
    try:
        pos = stream.tell()  # type: ignore[union-attr]
        if pos < tf.offset + tarfile.BLOCKSIZE:
            return "archive ends without its end-of-archive blocks (truncated)"
        left = -pos % tarfile.RECORDSIZE
        rest = stream.read(left) if left else b""  # type: ignore[union-attr]
    except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError, AttributeError) as exc:
        return f"archive damaged after its last readable member ({exc})"
    if rest.strip(b"\0"):
        return "archive ends at a damaged member header"
    return None


def _is_gzip(stream: object) -> bool:
    """Whether ``stream`` is, or reads through, the gzip decoder."""
    while isinstance(stream, (Prepend, _Broken)):
        stream = stream.tail if isinstance(stream, Prepend) else stream.source
    return isinstance(stream, Gunzip)


def _real_file(fobj: BinaryIO) -> bool:
    """Whether ``fobj`` is a seekable file on disk (random access is cheap)."""
    try:
        fobj.fileno()
        return fobj.seekable()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return False


__all__ = ["MAX_GZIP_LAYERS", "REFUSALS", "BundleError", "Leaf", "Policy", "Walker"]
