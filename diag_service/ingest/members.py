"""What each member of a bundle is, decided once from its bundle-relative path: a log, a stack dump, a
stack-dump index, a timing feed, or ignored. One definition for every stage and analyzer.

Member names are bundle-relative POSIX paths (``logs/rank-0.log``, ``run7/dumps/snap-003/rank-2.txt``;
nested archives as ``inner.tar.gz/x.log``).

* **Timing feed** (:data:`FEED_MEMBER`): a file named ``timing*.jsonl`` / ``.ndjson`` (optionally
  ``.gz``), ``timing*.csv`` or ``timing*.parquet``, at any depth (the lab's ``timing.jsonl``; the
  format is in ``docs/slow.md``).
* **Stack dump** (:func:`dump_member`): ``<root>/<snapshot>/rank-<R>.txt|.json`` (``rank_R`` also),
  where ``<root>`` is the bundle itself, its ``dumps/`` folder, or the same under the one folder an
  archive was made from (``run7/``, ``run7/dumps/``). py-spy ``dump`` text or ``--json`` output, or a
  faulthandler dump; snapshots sort by name in time order. ``<root>/ranks.json`` (rank -> node, pid,
  local rank) and ``<root>/index.json`` (snapshot times) go with them (:data:`DUMP_META`).
* **Flight Recorder dump** (:func:`find_fr_dumps`): in a folder, a file whose name ends in the rank
  (``nccl_trace_rank_3``, ``fr_3.json``; any common prefix, as PyTorch's ``fr_trace`` finds them) and
  whose content is a pickle or JSON dump (:func:`looks_like_fr`): the bundle's top or one of its
  immediate sub-folders (:func:`find_fr_folder`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from diag_service.fsutil import read_regular
from diag_service.limits import LIMITS

#: A per-rank timing feed, at any depth of a bundle.
FEED_MEMBER = re.compile(r"(?i)(?:^|/)timing[^/]*\.(?:(?:jsonl|ndjson)(?:\.gz)?|csv|parquet)$")


def feed_preference(name: str) -> tuple[int, str]:
    """Sort key among several feeds of one bundle: JSONL first (the lab's own), then gzipped JSONL, CSV,
    Parquet; then by name."""
    low = name.lower()
    order = 0 if low.endswith((".jsonl", ".ndjson")) else 1 if low.endswith(".gz") else 2 if low.endswith(".csv") else 3
    return order, name


#: A stack dump of one rank in one snapshot folder (a rank above ``LIMITS.max_rank`` is not one).
RANK_FILE = re.compile(r"^rank[-_]?(\d{1,7})\.(txt|json)$")
#: Bytes of one stack dump given to the hang analyzer (py-spy dumps of one process are kilobytes).
MAX_DUMP_BYTES = 8 << 20
#: Files that describe the stack dumps of a dumps root.
DUMP_META = ("ranks.json", "index.json")


class MemberKind(StrEnum):
    LOG = "log"
    STACK_DUMP = "stack_dump"
    DUMP_META = "dump_meta"
    TIMING_FEED = "timing_feed"
    IGNORED = "ignored"


@dataclass(frozen=True, slots=True)
class DumpPath:
    """Where a stack-dump member sits: its dumps ``root`` ("" for the bundle's top), ``snapshot`` folder
    and ``rank``."""

    root: str
    snapshot: str
    rank: int


def _root_ok(root: str) -> bool:
    parts = root.split("/") if root else []
    return len(parts) == 0 or (len(parts) == 1) or (len(parts) == 2 and parts[1] == "dumps")


def dump_member(name: str) -> DumpPath | None:
    """The :class:`DumpPath` of a stack-dump member name, or None when the name is not one."""
    parts = name.split("/")
    if len(parts) < 2:
        return None
    m = RANK_FILE.match(parts[-1])
    if not m:
        return None
    root = "/".join(parts[:-2])
    rank = int(m.group(1))
    if not _root_ok(root) or rank > LIMITS.max_rank:
        return None
    return DumpPath(root=root, snapshot=parts[-2], rank=rank)


def dump_meta_root(name: str) -> str | None:
    """The dumps root of a ``ranks.json`` / ``index.json`` member, or None for another name."""
    parts = name.split("/")
    if parts[-1] not in DUMP_META:
        return None
    root = "/".join(parts[:-1])
    return root if _root_ok(root) else None


def classify(name: str, excluded: Callable[[str], bool] | None = None,
             dump_roots: frozenset[str] | None = None) -> MemberKind:
    """The kind of member ``name``. ``excluded``: the bundle's exclusion test (``.diagignore`` and
    ``--exclude``), applied first. ``dump_roots``: when given, only these roots hold stack dumps (a
    ``rank-0.txt`` log file elsewhere stays a log) and their ``ranks.json`` / ``index.json`` are dump
    metadata; without it, metadata counts only in a ``dumps/`` folder."""
    if excluded is not None and excluded(name):
        return MemberKind.IGNORED
    if FEED_MEMBER.search(name):
        return MemberKind.TIMING_FEED
    dp = dump_member(name)
    if dp is not None and (dump_roots is None or dp.root in dump_roots):
        return MemberKind.STACK_DUMP
    root = dump_meta_root(name)
    if root is not None and (root in dump_roots if dump_roots is not None else is_dumps_folder(root)):
        return MemberKind.DUMP_META
    return MemberKind.LOG


def is_dumps_folder(root: str) -> bool:
    """True for a dumps root called ``dumps`` (whose rank files are dumps whatever they hold)."""
    return root == "dumps" or root.endswith("/dumps")


@dataclass(slots=True)
class DumpFile:
    """One rank's dump in one snapshot: its member ``name``, and either the ``path`` of the file on disk
    (a folder's dump, read when analysed) or its ``data`` (an archive's, read in the log pass). ``root``:
    the bundle folder ``path`` was found in; the file must still lie under it when it is read."""

    name: str
    path: str | None = None
    data: bytes = b""
    root: str | None = None

    def read(self) -> bytes:
        """At most :data:`MAX_DUMP_BYTES` of the dump. Raises ``OSError`` when the file cannot be read, and
        :class:`~diag_service.fsutil.UnsafePathError` (an ``OSError``) when it is now a link leaving
        ``root`` (or any link, without a root), a device or a pipe (:func:`~diag_service.fsutil.open_regular`)."""
        if self.path is None:
            return self.data[:MAX_DUMP_BYTES]
        return read_regular(self.path, MAX_DUMP_BYTES, self.root)


@dataclass(slots=True)
class StackDumps:
    """The stack snapshots of a bundle, whatever it was packed as (folder, tar, zip).

    ``snapshots``: snapshot name -> rank -> dump files of that rank (text and JSON; the analyzer prefers
    JSON). ``ranks_json`` / ``index_json``: the raw metadata files, when present. ``where``: a
    human-readable origin for messages."""

    where: str
    snapshots: dict[str, dict[int, list[DumpFile]]] = field(default_factory=dict)
    ranks_json: bytes | None = None
    index_json: bytes | None = None

    def add(self, dp: DumpPath, f: DumpFile) -> None:
        self.snapshots.setdefault(dp.snapshot, {}).setdefault(dp.rank, []).append(f)

    def __len__(self) -> int:
        return sum(len(files) for per_rank in self.snapshots.values() for files in per_rank.values())


@dataclass(slots=True)
class FeedMember:
    """A timing feed of the bundle: a ``path`` on disk (folders), or its ``text`` read from an archive
    in the same pass as the logs (JSONL only: a binary member of an archive is not text). ``root``: the
    bundle folder ``path`` was found in; the feed must still lie under it when it is read."""

    name: str
    path: str | None = None
    root: str | None = None
    text: str | None = None
    first_line: int = 1
    truncated: bool = False


#: A Flight Recorder dump's file name: anything, then the rank (``nccl_trace_rank_3``, ``fr_dump.3``, ``trace-3.json``).
RANK_SUFFIX = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d{1,6})(?P<ext>\.(?:pkl|pickle|json))?$")


#: A Flight Recorder dump inside an archive, known by name alone (its content is read only if so): PyTorch's
#: default file name (``TORCH_FR_DUMP_TEMP_FILE`` / ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` = ``/tmp/nccl_trace_rank_``)
#: or a rank-suffixed file in a folder named for the recorder (``fr/``, ``flight_recorder/``, ``fr_dumps/``).
FR_ARCHIVE_MEMBER = re.compile(
    r"(?i)(?:^|/)(?:(?:nccl|fr)_trace_rank_|(?:fr|flight_recorder|fr_dumps?|fr_traces?|nccl_traces?)/[^/]*?)"
    r"(?P<rank>\d{1,6})(?:\.(?:json|pkl|pickle))?$"
)


def fr_archive_rank(name: str) -> int | None:
    """The rank of an archive member that is a Flight Recorder dump by its name, else None."""
    m = FR_ARCHIVE_MEMBER.search(name)
    return int(m.group("rank")) if m else None


def _listdir(p: Path) -> list[Path]:
    try:
        return list(p.iterdir())
    except OSError:
        return []


def looks_like_fr(head: bytes) -> bool:
    """Whether the first bytes of a file look like a Flight Recorder dump (a pickle, or JSON naming its keys)."""
    if head[:1] == b"\x80":
        return b"entries" in head[:4096] or b"version" in head[:4096]
    h = head.lstrip()[:4096]
    return h[:1] == b"{" and b'"entries"' in h and (b'"pg_config"' in h or b'"pg_status"' in h or b'"version"' in h)


def pickle_code_refs(path: Path, limit: int = 1 << 20) -> list[str]:
    """The ``module.name`` globals a pickle file references (what loading it would import and may call),
    read with :mod:`pickletools` (opcodes only: nothing is unpickled). Empty for a non-pickle, an unreadable
    file, or a pickle of plain data."""
    import pickletools

    try:
        data = read_regular(path, limit)
    except OSError:
        return []
    if data[:1] != b"\x80":
        return []
    refs: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE") and isinstance(arg, str):
                strings = [*strings[-1:], arg]
            elif op.name == "GLOBAL" and isinstance(arg, str):
                refs.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) == 2:
                refs.append(".".join(strings))
    except (ValueError, EOFError, IndexError):
        pass  # truncated: what was seen so far
    return list(dict.fromkeys(refs))


def find_fr_dumps(folder: str | Path) -> tuple[dict[int, Path], list[str]]:
    """Flight Recorder dumps directly in ``folder``: files whose name ends in the rank (after any common
    prefix, as ``fr_trace`` finds them) and whose content looks like a dump. Returns rank -> path and
    warnings (two files for one rank keep the newest)."""
    out: dict[int, Path] = {}
    warnings: list[str] = []
    odd: list[str] = []
    try:
        files = sorted(p for p in Path(folder).iterdir() if p.is_file() and not p.is_symlink())
    except OSError as exc:
        return {}, [f"cannot list {folder}: {exc}"]
    for p in files:
        m = RANK_SUFFIX.match(p.name)
        if not m:
            continue
        try:
            head = read_regular(p, 4096, folder)
        except OSError:
            continue
        if not looks_like_fr(head):
            odd.append(p.name)
            continue
        r = int(m.group("rank"))
        if r in out:
            keep = max((out[r], p), key=lambda q: q.stat().st_mtime)
            warnings.append(f"two Flight Recorder dumps for rank {r} ({out[r].name}, {p.name}); kept {keep.name}")
            out[r] = keep
        else:
            out[r] = p
    if out:
        prefixes = {RANK_SUFFIX.match(p.name).group("prefix") for p in out.values()}  # type: ignore[union-attr]
        for name in odd:
            if RANK_SUFFIX.match(name).group("prefix") in prefixes:  # type: ignore[union-attr]
                code = pickle_code_refs(Path(folder) / name)
                if code:
                    warnings.append(f"{name}: a pickle that would call {', '.join(code[:3])} when loaded: refused, "
                                    "never unpickled (a Flight Recorder dump holds plain data only)")
                else:
                    warnings.append(f"{name}: named like a Flight Recorder dump but empty, truncated or not one; not read")
    return out, warnings


@dataclass(frozen=True, slots=True)
class FRFolder:
    """A folder's Flight Recorder dumps as :func:`find_fr_dumps` found them: rank -> file, and warnings."""

    folder: Path
    files: dict[int, Path]
    warnings: list[str]


def find_fr_folder(root: str | os.PathLike[str]) -> FRFolder | None:
    """The Flight Recorder dumps of ``root`` itself or of the first (by name) of its immediate
    sub-folders that holds any (``fr/``, ``traces/``, ...), each folder scanned once; None without any."""
    p = Path(root)
    if not p.is_dir():
        return None
    for cand in [p, *sorted(d for d in _listdir(p) if d.is_dir() and not d.is_symlink())[:50]]:
        files, warnings = find_fr_dumps(cand)
        if files:
            return FRFolder(cand, files, warnings)
    return None
    for cand in [p, *sorted(d for d in _listdir(p) if d.is_dir() and not d.is_symlink())[:50]]:
        if find_fr_dumps(cand)[0]:
            return cand
    return None



__all__ = [
    "DUMP_META",
    "FEED_MEMBER",
    "MAX_DUMP_BYTES",
    "RANK_FILE",
    "DumpFile",
    "DumpPath",
    "RANK_SUFFIX",
    "FR_ARCHIVE_MEMBER",
    "FRFolder",
    "find_fr_folder",
    "fr_archive_rank",
    "find_fr_dumps",
    "looks_like_fr",
    "FeedMember",
    "MemberKind",
    "StackDumps",
    "classify",
    "dump_member",
    "dump_meta_root",
    "feed_preference",
    "is_dumps_folder",
]
