"""Safe reading of untrusted archives and compressed streams: the pieces every reader shares.

The readers and rules of the one bundle walker (:mod:`diag_service.ingest.walk`, which ingest runs to
*salvage* and the service's admission check to *refuse*): byte counting on the compressed side, streaming gzip that keeps what
a truncated file yields, a prepend stream for sniffed heads, pieced reads that return what came before
a read error, member-name safety, container sniffing, a zip's central-directory check before it is
parsed, and the decompression budget (bundle total; per-member ratio above a floor; the bundle's ratio of
all decompressed bytes, nested archives' included, to the bytes actually read from the input: the
decompression-bomb guard). Also the one reader that looks into an archive outside the walk:
:func:`archive_member_text` (a bundle's ``.diagignore``, read before the walk), under the same limits.
"""

from __future__ import annotations

import io
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from diag_service.limits import BundleLimits

GZIP_MAGIC = b"\x1f\x8b"
#: Size of one read from a member; a block is assembled from several, so that a read error (a
#: truncated archive) loses at most this much of what came before it.
READ_PIECE = 256 << 10

Compressed = int | Callable[[], int] | None
#: Largest binary member handed whole to a ``raw`` reader (a 2,000-entry Flight Recorder dump is ~2-5 MB).
MAX_RAW_BYTES = 256 << 20

class Budget:
    """Counts decompressed bytes across the bundle and per member (decompression-bomb guard), and holds the
    caller's ``skip`` test of member names (members it names are never opened), ``capture`` test
    (members read for another analyzer: streamed like logs but not counted as log files or lines) and
    ``raw`` test (binary members handed whole, up to :data:`MAX_RAW_BYTES`, to ``on_raw(name, data,
    error)``: Flight Recorder pickles)."""

    def captured(self, name: str) -> bool:
        return self.capture is not None and self.capture(name)


    def __init__(self, limits: BundleLimits, skip: Callable[[str], bool] | None = None,
                 capture: Callable[[str], bool] | None = None,
                 raw: Callable[[str], bool] | None = None,
                 on_raw: Callable[[str, bytes, str | None], None] | None = None) -> None:
        self.limits = limits
        self.skip = skip
        self.capture = capture
        self.raw = raw
        self.on_raw = on_raw
        self.total = 0
        #: bytes read from the input itself (its files on disk, or the stream), counted by the
        #: :class:`Counting` readers given this budget; 0 while nothing counts them
        self.read_bytes = 0
        self.members = 0  # files and archive entries met so far (see member())
        self.stopped = False  # the bundle limit was hit: open no further member
        self.bombs = 0  # members cut for their decompression ratio
        #: decompressed bytes of members already cut for their own ratio: found and stopped, they do not also
        #: count toward the bundle's ratio (or one cut bomb would drop every later log of a folder)
        self.cut_bytes = 0
        self.bundle_bomb = False  # the whole bundle's ratio was hit (many members, or nested archives)

    def member(self) -> bool:
        """Count one member: a folder's file or an archive's entry, nested archives' included (one count
        for the whole bundle, so archives inside archives cannot multiply the limit). False once more than
        ``max_members`` were counted; the bundle then stops (:attr:`stopped`)."""
        self.members += 1
        if self.members > self.limits.max_members:
            self.stopped = True
            return False
        return True

    def exceeded(self, member_bytes: int, compressed: Compressed) -> str | None:
        """``compressed``: the member's compressed size, or a function returning how many compressed
        bytes have been consumed so far (streamed archives, whose members' sizes are uncompressed).

        Besides the total and the member's ratio, the bundle's ratio: every decompressed byte so far
        (members of nested archives included; not those of members already cut for their own ratio,
        :attr:`cut_bytes`) against :attr:`read_bytes`, once past the same floor. It
        catches what the member rule cannot: many members each under the floor, and an archive inside an
        archive, whose "compressed" size is itself decompressed."""
        if self.total > self.limits.max_total_bytes:
            self.stopped = True
            return f"bundle exceeds {self.limits.max_total_bytes} decompressed bytes; rest skipped"
        if compressed is not None and member_bytes > self.limits.ratio_floor_bytes:
            c = compressed() if callable(compressed) else compressed
            if member_bytes > self.limits.max_ratio * max(c, 1):
                self.bombs += 1
                self.cut_bytes += member_bytes
                return (
                    f"decompression ratio above {self.limits.max_ratio:.0f}x "
                    f"({member_bytes} from {c} bytes): likely a decompression bomb, member cut"
                )
        ratio_total = self.total - self.cut_bytes
        if (self.read_bytes and ratio_total > self.limits.ratio_floor_bytes
                and ratio_total > self.limits.max_ratio * self.read_bytes):
            self.stopped = self.bundle_bomb = True
            self.bombs += 1
            return (f"bundle decompression ratio above {self.limits.max_ratio:.0f}x ({self.total} bytes from "
                    f"{self.read_bytes} read): likely a decompression bomb (nested archives count); rest skipped")
        return None


class Counting(io.RawIOBase):
    """A read-only stream that counts the bytes read through it (compressed bytes of an archive) in
    ``n``, and in ``budget.read_bytes`` when given a :class:`Budget` (the input's own bytes). Seeks,
    ``tell`` and ``fileno`` go to the underlying file, so a zip on disk is read in place through it."""

    def __init__(self, raw: BinaryIO, budget: Budget | None = None) -> None:
        self.raw = raw
        self.n = 0
        self.budget = budget

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        try:
            return bool(self.raw.seekable())
        except (AttributeError, ValueError):
            return False

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.raw.seek(pos, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def fileno(self) -> int:
        return self.raw.fileno()

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        data = self.raw.read(size)
        self.n += len(data)
        if self.budget is not None:
            self.budget.read_bytes += len(data)
        return data

    def readinto(self, b) -> int:  # type: ignore[override]
        into = getattr(self.raw, "readinto", None)
        if into is None:
            data = self.read(len(b))
            b[: len(data)] = data
            return len(data)
        n = into(b) or 0  # straight into the caller's buffer: no intermediate bytes object
        self.n += n
        if self.budget is not None:
            self.budget.read_bytes += n
        return n


class Gunzip(io.RawIOBase):
    """Streaming gzip decompression that keeps everything a truncated or corrupt file yields.

    ``gzip.GzipFile`` raises on a truncated stream and drops what the failing read had decompressed
    (for a small file, all of it); this returns the data first and raises :class:`OSError` after.
    Concatenated gzip members are read in turn; ``consumed`` counts compressed bytes (bomb guard).
    """

    _OUT = 1 << 20

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.consumed = 0
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._out = b""
        self._done = False
        self._error: str | None = None

    def readable(self) -> bool:
        return True

    def consumed_bytes(self) -> int:
        return self.consumed

    def _raw(self) -> bytes:
        data = self.raw.read(READ_PIECE)
        self.consumed += len(data)
        return data

    def _fill(self) -> None:
        d = self._d
        if d.eof:
            rest = d.unused_data or self._raw()
            if not rest.strip(b"\x00"):
                self._done = True  # end of the last member (gzip tolerates trailing zeros)
                return
            self._d = d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = rest
        else:
            data = d.unconsumed_tail or self._raw()
            if not data:
                self._out = d.flush()
                self._error = "compressed data ends before the end of the gzip stream (truncated file)"
                self._done = True
                return
        try:
            self._out = d.decompress(data, self._OUT)
        except zlib.error as exc:
            self._error = f"corrupt gzip data ({exc})"
            self._done = True

    def readinto(self, b) -> int:  # type: ignore[override]
        while not self._out and not self._done:
            self._fill()
        if not self._out:
            if self._error:
                error, self._error = self._error, None
                raise OSError(error)
            return 0
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n


class Prepend(io.RawIOBase):
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
        into = getattr(self.tail, "readinto", None)
        if into is not None:
            return into(b) or 0
        data = self.tail.read(len(b))
        n = len(data)
        b[:n] = data
        return n


def read_pieces(fobj: BinaryIO, size: int) -> tuple[bytes, Exception | None]:
    """Read up to ``size`` bytes in pieces; on a read error return what came before it, and the error."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        try:
            piece = fobj.read(min(READ_PIECE, size - got))
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError) as exc:
            return b"".join(parts), exc
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts), None


def read_pieces_into(fobj: BinaryIO, buf: memoryview) -> tuple[int, Exception | None]:
    """:func:`read_pieces` into ``buf`` (a writable byte view; up to ``len(buf)`` bytes, ``READ_PIECE`` at a
    time): the number of bytes read, and the read error that stopped it (None at the end of the stream or a
    full ``buf``). The bytes read before an error are in ``buf`` as :func:`read_pieces` returns them."""
    got = 0
    size = len(buf)
    while got < size:
        try:
            n = fobj.readinto(buf[got : min(got + READ_PIECE, size)])  # type: ignore[attr-defined]
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError) as exc:
            return got, exc
        if not n:
            break
        got += n
    return got, None


def safe_member_name(name: str) -> bool:
    p = PurePosixPath(name.replace("\\", "/"))
    return not p.is_absolute() and ".." not in p.parts and not re.match(r"^[A-Za-z]:", name)




#: Bytes of central directory allowed per member a zip may have (a record is 46 bytes plus the name and
#: extra fields; real names are under 300 bytes), so a directory that would be parsed into more than
#: the member limit's worth of objects is refused before :class:`zipfile.ZipFile` reads it.
ZIP_DIR_BYTES_PER_MEMBER = 1024
_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


def zip_directory(fh: BinaryIO) -> tuple[int, int] | None:
    """``(entries, central directory bytes)`` from a zip's end-of-central-directory record (zip64 too),
    read from the last 64 KiB of the seekable ``fh`` (its position is restored); None when there is none
    (not a zip, or damaged). Raises ``OSError`` when ``fh`` cannot be read."""
    pos = fh.tell()
    try:
        size = fh.seek(0, io.SEEK_END)
        tail_len = min(size, _EOCD.size + 0xFFFF)
        fh.seek(size - tail_len)
        tail = fh.read(tail_len)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _EOCD.size > len(tail):
            return None
        _, _, _, _, entries, cd_size, _, _ = _EOCD.unpack_from(tail, at)
        # a zip64 locator right before the record: zipfile then takes the zip64 record's values, whatever
        # the 32-bit record says, so they are the ones checked
        loc_at = size - tail_len + at - _EOCD64_LOCATOR.size
        if loc_at < 0:
            return entries, cd_size
        fh.seek(loc_at)
        loc = fh.read(_EOCD64_LOCATOR.size)
        if len(loc) != _EOCD64_LOCATOR.size or loc[:4] != b"PK\x06\x07":
            return entries, cd_size
        eocd64_at = _EOCD64_LOCATOR.unpack(loc)[2]
        if eocd64_at > size:
            return entries, cd_size
        fh.seek(eocd64_at)
        rec = fh.read(_EOCD64.size)
        if len(rec) == _EOCD64.size and rec[:4] == b"PK\x06\x06":
            fields = _EOCD64.unpack(rec)
            entries, cd_size = max(entries, fields[7]), max(cd_size, fields[8])
        return entries, cd_size
    finally:
        fh.seek(pos)


def zip_directory_problem(fh: BinaryIO, max_members: int) -> str | None:
    """Why a zip may not be opened (its central directory declares more than ``max_members`` entries, or
    is larger than ``max_members`` x :data:`ZIP_DIR_BYTES_PER_MEMBER` bytes, whatever it declares), or
    None. Reads only the end of the file: :class:`zipfile.ZipFile` would first turn every entry of the
    directory into an object (300,000 folder entries: ~130 MB). Raises ``OSError`` on a read error."""
    found = zip_directory(fh)
    if found is None:
        return None
    entries, cd_size = found
    if entries > max_members:
        return f"archive has more than {max_members} members ({entries} in its directory)"
    if cd_size > max(1 << 20, max_members * ZIP_DIR_BYTES_PER_MEMBER):
        return f"zip directory of {cd_size} bytes is too large for {max_members} members"
    return None


#: Member names read as archives inside a bundle (by ingest up to ``max_nesting`` levels, and inspected
#: by the service's admission check to the same depth).
TAR_NAME = re.compile(r"(?i)\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$")


def nested_kind(name: str) -> str | None:
    """``tar``, ``zip`` or ``gz`` for a member name that ingest opens as a nested archive or a compressed
    log, else None."""
    lower = name.lower()
    if TAR_NAME.search(lower):
        return "tar"
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(".gz"):
        return "gz"
    return None


def gzip_holds_tar(head: bytes) -> bool:
    """Whether the first bytes of a gzip stream (a few KiB are enough) decompress to a tar header
    (``ustar`` at offset 257). False for data that does not decompress: the walk reports the damage."""
    try:
        inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 512)
    except zlib.error:
        return False
    return inner[257:262] == b"ustar"


def sniff_kind(head: bytes) -> str:
    """The container a stream's first bytes (at least 262 for tar) announce: ``gz``, ``bz2``, ``xz``,
    ``zip``, ``tar`` or ``log`` (anything else)."""
    if head[:2] == GZIP_MAGIC:
        return "gz"
    if head[:3] == b"BZh":
        return "bz2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return "log"


# --- one small member, looked up before the walk ------------------------------------------------------

#: Decompressed bytes :func:`archive_member_text` may always inflate to reach a member, whatever a
#: bundle's ``ratio_floor_bytes`` (which may be 0): room for the folder entries and small files a
#: collector writes before ``.diagignore``.
MEMBER_SEARCH_FLOOR = 1 << 20


def archive_member_text(
    path: str | os.PathLike[str], basename: str, limits: BundleLimits | None = None, max_depth: int = 1,
    max_bytes: int = 64 * 1024, max_archive_bytes: int = 256 * 2**20, max_tar_members: int = 8,
) -> tuple[str, str] | None:
    """``(member name, text)`` of the first regular member called ``basename`` in a tar or zip archive.

    Only members at most ``max_depth`` folders deep count (``.diagignore`` at the top of a bundle, or of the
    one folder it was archived from); at most ``max_bytes`` of it are read (UTF-8, bad bytes replaced). In
    a tar only the first ``max_tar_members`` members are looked at (the folder entries and the
    ``.diagignore`` a collector writes first), and only while they end within ``limits.ratio_floor_bytes``
    (at least :data:`MEMBER_SEARCH_FLOOR`) of decompressed data: a streamed tar is inflated to reach a
    member, and past that floor the walk's ratio check stops a decompression bomb, so this look never
    inflates more of one than the walk does, nor the archive a second time. A zip's central directory is
    checked against ``limits.max_members`` (:func:`zip_directory_problem`) before it is parsed.
    ``limits``: default :class:`~diag_service.limits.BundleLimits`.

    Returns None for a path that is not a ``.tar*``/``.zip`` file, an archive larger than
    ``max_archive_bytes`` (a tar.gz must be inflated to list it), no such member within those bounds, a
    zip over the member limit, or a tar that breaks before one (its truncation and limits are the walk's
    to report). Raises ``OSError``, ``tarfile.TarError``, ``zipfile.BadZipFile`` or ``EOFError`` when the
    archive cannot be opened or the member cannot be read.
    """
    from diag_service.limits import BundleLimits

    limits = limits or BundleLimits()
    p = Path(path)
    if not p.is_file() or p.stat().st_size > max_archive_bytes:
        return None

    def wanted(name: str) -> bool:
        parts = (name[2:] if name.startswith("./") else name).split("/")
        return parts[-1] == basename and len(parts) - 1 <= max_depth and safe_member_name(name)

    if TAR_NAME.search(p.name):
        # streamed, and only over the first members: a compressed tar has no index, and reading it to
        # the end here would decompress it twice (collectors write .diagignore first; tarfile and `tar --sort=name` put it first)
        with open(p, "rb") as raw, tarfile.open(fileobj=raw, mode="r|*") as tf:  # type: ignore[call-overload]
            members = iter(tf)
            for _ in range(max_tar_members):
                try:
                    m = next(members)
                except StopIteration:
                    return None
                except (EOFError, tarfile.TarError, zlib.error, lzma.LZMAError):
                    # the archive breaks before any such member: it has none that can be read, and the walk
                    # reports the truncation itself (not as this member being unreadable)
                    return None
                if m.isfile() and wanted(m.name):
                    f = tf.extractfile(m)
                    return (m.name, f.read(max_bytes).decode("utf-8", errors="replace")) if f else None
                if m.offset_data + m.size > max(limits.ratio_floor_bytes, MEMBER_SEARCH_FLOOR):
                    return None  # the next header lies past what may be inflated to find it
            return None
    elif p.name.lower().endswith(".zip"):
        with open(p, "rb") as fh:
            if zip_directory_problem(fh, limits.max_members) is not None:
                return None
            with zipfile.ZipFile(fh) as zf:
                for info in zf.infolist():
                    if not info.is_dir() and wanted(info.filename):
                        with zf.open(info) as f:
                            return info.filename, f.read(max_bytes).decode("utf-8", errors="replace")
    return None
