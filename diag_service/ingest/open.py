"""A job's bundle as one object: :func:`open_bundle` reads its ``.diagignore``, classifies every member once
(:mod:`diag_service.ingest.members`) and streams it once, whatever it is packed as.

    bundle = open_bundle("job.tar.gz", limits, exclude=["*.bin"])
    for block in bundle.blocks():   # the log members, as normalised text blocks (one pass)
        ...
    bundle.dumps()                   # stack snapshots met on the way (StackDumps or None)
    bundle.feeds()                   # timing feeds met on the way (list of FeedMember)
    bundle.report                    # sizes, layouts, every warning (InputReport)

:meth:`Bundle.blocks` may be iterated once. Stack dumps and timing feeds are captured in the same pass
(in an archive they cannot be read again without decompressing it again), so ``dumps()`` and
``feeds()`` are complete once ``blocks()`` is exhausted; for a folder they point at the files, for an
archive they hold the text. :meth:`Bundle.from_text` wraps text (a pasted log) with no temporary file.

Raises :class:`~diag_service.ingest.bundle.BundleError` (via ``blocks()``) for a missing or unopenable
path; everything else is a warning in ``report``.
"""

from __future__ import annotations

import fnmatch
import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from diag_service.domain import InputReport
from diag_service.fsutil import read_regular
from diag_service.ingest.archive import archive_member_text
from diag_service.ingest.bundle import Block, IngestLimits, attribute_path, read_bundle
from diag_service.ingest.members import (
    MAX_DUMP_BYTES,
    DumpFile,
    FeedMember,
    FRFolder,
    MemberKind,
    StackDumps,
    classify,
    dump_member,
    dump_meta_root,
    feed_preference,
    find_fr_folder,
    fr_archive_rank,
    is_dumps_folder,
)

DIAGIGNORE = ".diagignore"
#: Bytes of timing-feed text kept from an archive (a 10,000-step, 1,024-rank feed is about 1 GB; a
#: bigger one should be passed as a file).
MAX_FEED_TEXT_BYTES = 1 << 30
#: Strings that open every stack-dump format the hang analyzer reads (py-spy text and JSON,
#: faulthandler), used to tell a dump from a log called ``rank-0.txt`` outside a ``dumps/`` folder.
_DUMP_MARKERS = ("Thread 0x", "Current thread 0x", "Process ", '"thread_id"', '"frames"')


def _looks_like_dump(head: str) -> bool:
    h = head[:4096]
    return any(m in h for m in _DUMP_MARKERS)


#: Log bytes of a pipe kept from the log pass for the step-time reader; also the bound of the pipeline's second
#: read of a file bundle (``diag_service.pipeline.run.STEP_LOG_MAX_BYTES`` is this constant).
KEPT_PIPE_BYTES = 64 << 20


def read_diagignore(path: str, report: InputReport, limits: IngestLimits | None = None) -> list[str]:
    """Patterns of a bundle's ``.diagignore`` (one glob per line, ``#`` comments), plus the file itself.

    A collector (or the fault-injection lab, for its ground truth) lists there the files of the bundle
    that are not logs: at the top of a bundle directory, or in a tar/zip archive at its top or in the one
    folder it was archived from (patterns with a ``/`` are then taken relative to that folder; archives
    over 256 MiB are not searched; ``limits`` bound the look as :func:`~diag_service.ingest.archive.archive_member_text`
    says). At most 200 patterns from the first 64 KiB. An unreadable file is a warning, not an error.
    """
    p = Path(path)
    folder = ""
    try:
        if p.is_dir():
            f = p / DIAGIGNORE
            if not f.is_file():
                return []
            # a link to a file outside the bundle is not the bundle's to apply
            text = read_regular(f, 64 * 1024, p).decode("utf-8", errors="replace")
        else:
            found = archive_member_text(p, DIAGIGNORE, limits)
            if found is None:
                return []
            member, text = found
            folder = member.rsplit("/", 1)[0] + "/" if "/" in member else ""
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile) as exc:
        report.warnings.append(f"{DIAGIGNORE}: unreadable ({exc}), not applied")
        return [DIAGIGNORE]
    pats = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return [DIAGIGNORE, *(folder + q if "/" in q else q for q in pats[:200])]


def excluded_by(patterns: list[str]):  # noqa: ANN201 - Callable[[str], bool]
    """The test "member name or base name matches one of ``patterns`` (fnmatch)", or, as ``.gitignore`` reads them,
    one of the member's folders does: a pattern that ends with ``/`` names a folder (``_live/``: everything under any
    folder ``_live``; with a ``/`` before its end, a folder path from the top, ``runs/_live/``), and a pattern without
    a ``/`` also matches a folder name (``_live``). A new user's trial 46 wrote ``_live/`` as for git, which matched no
    file, and the tool's own live output copied there was read as the job's logs."""
    folders = [p.rstrip("/") for p in patterns if p.endswith("/") and p.rstrip("/")]
    names = [p for p in patterns if "/" not in p]
    files = [p for p in patterns if not p.endswith("/")]

    def test(path: str) -> bool:
        base = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(base, p) for p in files):
            return True
        dirs = path.split("/")[:-1]
        if not dirs:
            return False
        if any(fnmatch.fnmatch(d, p) for d in dirs for p in names):
            return True
        for p in folders:
            if "/" in p:
                if any(fnmatch.fnmatch("/".join(dirs[: i + 1]), p) for i in range(len(dirs))):
                    return True
            elif any(fnmatch.fnmatch(d, p) for d in dirs):
                return True
        return False

    return test


#: The log members' names a bundle keeps (:attr:`Bundle.log_members`).
MAX_LOG_MEMBERS = 100_000


class Bundle:
    """One job's bundle, classified once. Build with :func:`open_bundle` or :meth:`from_text`."""

    def __init__(self, path: str, report: InputReport, limits: IngestLimits | None, exclude: list[str],
                 text: str | None = None, name: str = "input.log", dumps_only: bool = False) -> None:
        self.path = path
        self.report = report
        self.limits = limits
        self.exclude = exclude
        self._excluded = excluded_by(exclude)
        self._text = text
        self._name = name
        self.is_dir = text is None and os.path.isdir(path)
        self._dumps = StackDumps(where=path)
        self._dump_roots: set[str] = set()
        self._feeds: list[FeedMember] = []
        self._dump_files: dict[str, DumpFile] = {}  # dumps read in the log pass, by member name
        self._consumed = False
        self._kept: list[Block] | None = []  # a pipe's log blocks, for step_blocks()
        #: every rank file at a dumps root is a dump, and the roots' ranks.json/index.json are metadata
        #: (``diag hang``: the user says the folder holds stack dumps)
        self.dumps_only = dumps_only
        self._fr: FRFolder | Literal[False] | None = None  # the folder's Flight Recorder dumps (False: none)
        self._fr_names_cache: frozenset[str] | None = None
        self._fr_archive: dict[int, tuple[str, bytes]] = {}  # an archive's Flight Recorder dumps: rank -> (name, data)
        #: the bundle paths of the log members read (first :data:`MAX_LOG_MEMBERS`), in bundle order, once blocks()
        #: has been iterated: which files the logs came from (torchelastic's attempt_N folders)
        self.log_members: list[str] = []

    def fr_archive_dumps(self) -> dict[int, tuple[str, bytes]]:
        """Flight Recorder dumps read from an archive in the log pass (members named like
        :data:`~diag_service.ingest.members.FR_ARCHIVE_MEMBER`): rank -> (member name, bytes). Empty for
        folders (see :meth:`flight_recorder`) and before :meth:`blocks` has run."""
        return dict(self._fr_archive)

    def _is_fr_archive_member(self, name: str) -> bool:
        return not self.is_dir and self.kind(name) is not MemberKind.IGNORED and fr_archive_rank(name) is not None

    def _on_fr_member(self, name: str, data: bytes, error: str | None) -> None:
        rank = fr_archive_rank(name)
        if rank is None:
            return
        if error is not None:
            self.report.warnings.append(f"{name}: read error ({error}); the Flight Recorder dump may be truncated")
        if rank in self._fr_archive:
            self.report.warnings.append(
                f"two Flight Recorder dumps for rank {rank} ({self._fr_archive[rank][0]}, {name}); kept {name}")
        self._fr_archive[rank] = (name, data)

    def flight_recorder(self) -> FRFolder | None:
        """The folder of the bundle holding Flight Recorder dumps and its dump files
        (:func:`~diag_service.ingest.members.find_fr_folder`), or None. Folders only; an archive's dumps
        are :meth:`fr_archive_dumps`."""
        if self._fr is None:
            self._fr = (find_fr_folder(self.path) if self.is_dir else None) or False
        return self._fr or None

    def _fr_names(self) -> frozenset[str]:
        """Bundle-relative names of the folder's Flight Recorder dumps (not logs)."""
        if self._fr_names_cache is None:
            fr = self.flight_recorder()
            rel = os.path.relpath(fr.folder, self.path) if fr is not None else "."
            self._fr_names_cache = frozenset(
                p.name if rel == "." else f"{rel}/{p.name}".replace(os.sep, "/") for p in (fr.files.values() if fr else ())
            )
        return self._fr_names_cache

    @classmethod
    def from_text(cls, text: str, name: str = "input.log") -> Bundle:
        """A bundle of one log given as text (a pasted log, a chat message): nothing touches the disk."""
        return cls(name, InputReport(path=name), None, [], text=text, name=name)

    # -- classification ----------------------------------------------------------------------------

    def kind(self, name: str) -> MemberKind:
        """The kind of member ``name`` (bundle-relative)."""
        k = classify(name, self._excluded)
        if self.dumps_only and k is MemberKind.LOG and dump_meta_root(name) is not None:
            return MemberKind.DUMP_META
        return k

    def _not_read(self, name: str) -> bool:
        """True for members the log pass does not open: ignored ones, and in a folder the feeds, dump
        metadata and dumps under ``dumps/``, which the analyzers read from disk themselves."""
        k = self.kind(name)
        if k is MemberKind.IGNORED:
            return True
        if self.is_dir and name in self._fr_names():
            return True  # a Flight Recorder dump: the hang analyzer reads it
        if self.is_dir:
            full = os.path.join(self.path, name)
            if k is MemberKind.TIMING_FEED:
                self._feeds.append(FeedMember(name=name, path=full, root=self.path))
                return True
            if k is MemberKind.DUMP_META:
                try:
                    self._set_meta(name, read_regular(full, MAX_DUMP_BYTES, self.path))
                except OSError as exc:
                    self.report.warnings.append(f"{name}: unreadable ({exc.strerror or exc}), skipped")
                return True
            if k is MemberKind.STACK_DUMP and self._strong_dump(name):
                self._register_dump(DumpFile(name=name, path=full, root=self.path))
                return True
            return False
        if k is MemberKind.TIMING_FEED and name.lower().endswith(".parquet"):
            self.report.warnings.append(f"{name}: a Parquet timing feed inside an archive is not analysed; "
                                        "pass it to `diag slow` as a file")
            return True
        return False

    def _captured(self, name: str) -> bool:
        k = self.kind(name)
        return k in (MemberKind.TIMING_FEED, MemberKind.DUMP_META) or (
            k is MemberKind.STACK_DUMP and self._strong_dump(name))

    def _strong_dump(self, name: str) -> bool:
        """A rank file under a ``dumps/`` folder (or any, with ``dumps_only``) is a dump whatever it holds
        (a damaged dump is still a dump the hang analyzer must report); elsewhere its content decides."""
        dp = dump_member(name)
        return dp is not None and (self.dumps_only or is_dumps_folder(dp.root))

    # -- the one pass --------------------------------------------------------------------------------

    def blocks(self) -> Iterator[Block]:
        """The log members' text blocks, in bundle order; dumps and feeds are captured on the way.
        Raises :class:`RuntimeError` when iterated a second time."""
        if self._consumed:
            raise RuntimeError("a Bundle's blocks() can be iterated once")
        self._consumed = True
        if self._text is not None:
            src = attribute_path(self._name)
            text = self._text if self._text.endswith("\n") else self._text + "\n"
            self.report.files += 1
            self.report.lines += text.count("\n")
            self.report.bytes_read += len(text.encode("utf-8", errors="replace"))
            yield Block(source=src, text=text, first_line=1)
            return
        pending: str | None = None  # a weak dump candidate whose first block decides what it is
        pending_is_dump = False
        # a pipe cannot be read twice: its log blocks are kept (up to KEPT_PIPE_BYTES) for step_blocks()
        keep = not self._rereadable()
        kept_bytes = 0
        for b in read_bundle(self.path, self.report, self.limits, skip=self._not_read, capture=self._captured,
                             raw=self._is_fr_archive_member, on_raw=self._on_fr_member):
            name = b.source.path
            kind = self.kind(name)
            if kind is MemberKind.TIMING_FEED:
                self._add_feed(name, b)
                continue
            if kind is MemberKind.DUMP_META:
                self._add_meta(name, b)
                continue
            if kind is MemberKind.STACK_DUMP:
                if self._strong_dump(name):
                    self._add_dump(name, b)
                    continue
                if name != pending:
                    pending, pending_is_dump = name, _looks_like_dump(b.text)
                if pending_is_dump:
                    self._add_dump(name, b)
                    continue
            if keep and self._kept is not None:
                kept_bytes += len(b.data) if b.data is not None else len(b.text)
                if kept_bytes > KEPT_PIPE_BYTES:
                    self._kept = None  # too much to keep: the step-time reader gets nothing rather than a part
                else:
                    self._kept.append(b)
            if (not self.log_members or self.log_members[-1] != name) and len(self.log_members) < MAX_LOG_MEMBERS:
                self.log_members.append(name)
            yield b
        self._finish()

    def _rereadable(self) -> bool:
        """A folder or a regular file can be read again; a pipe or a device cannot."""
        return os.path.isdir(self.path) or os.path.isfile(self.path)

    def step_blocks(self) -> Iterator[Block]:
        """The log members' blocks read a second time, with progress-bar redraws kept (every tqdm update:
        :func:`~diag_service.ingest.bundle.read_bundle`'s ``redraws``), for the step-time reader. Only log
        members; nothing is counted in :attr:`report`. A bundle given as text yields that text; one read from
        a pipe or a device (``kubectl logs POD | diag diagnose /dev/stdin``), which cannot be read twice,
        yields the log blocks :meth:`blocks` kept of it (as a terminal shows them, redraws dropped; nothing
        past :data:`KEPT_PIPE_BYTES`)."""
        if self._text is not None:
            text = self._text if self._text.endswith("\n") else self._text + "\n"
            yield Block(source=attribute_path(self._name), text=text, first_line=1)
            return
        if not self._rereadable():
            yield from self._kept or ()
            return
        scratch = InputReport(path=self.path)
        for b in read_bundle(self.path, scratch, self.limits, skip=self._not_read, redraws=True):
            if self.kind(b.source.path) is MemberKind.LOG:
                yield b

    def _add_feed(self, name: str, b: Block) -> None:
        f = next((f for f in self._feeds if f.name == name), None)
        if f is None:
            f = FeedMember(name=name, text="", first_line=b.first_line)
            self._feeds.append(f)
        if len(f.text or "") + len(b.text) <= MAX_FEED_TEXT_BYTES:
            f.text = (f.text or "") + b.text
        elif not f.truncated:
            f.truncated = True
            self.report.warnings.append(f"{name}: timing feed larger than {MAX_FEED_TEXT_BYTES} bytes in an archive; "
                                        "only the start is analysed (pass the feed itself to `diag slow`)")

    def _set_meta(self, name: str, data: bytes) -> None:
        if name.endswith("ranks.json"):
            self._dumps.ranks_json = data
        else:
            self._dumps.index_json = data
        root = dump_meta_root(name)
        if root is not None:
            self._dump_roots.add(root)

    def _add_meta(self, name: str, b: Block) -> None:
        prev = (self._dumps.ranks_json if name.endswith("ranks.json") else self._dumps.index_json) or b""
        self._set_meta(name, prev + b.text.encode("utf-8") if b.first_line > 1 else b.text.encode("utf-8"))

    def _register_dump(self, f: DumpFile) -> DumpFile:
        dp = dump_member(f.name)
        if dp is not None:  # only names that dump_member accepts are classified as dumps
            self._dump_roots.add(dp.root)
            self._dumps.add(dp, f)
        return f

    def _add_dump(self, name: str, b: Block) -> None:
        """One block of a dump read in the log pass (archives, and folders' dumps outside ``dumps/``):
        a folder's is read again from disk when analysed, an archive's text is kept (up to the limit)."""
        if b.first_line == 1:
            path = os.path.join(self.path, name) if self.is_dir else None
            self._dump_files[name] = self._register_dump(DumpFile(name=name, path=path, root=self.path if path else None))
        f = self._dump_files.get(name)
        if f is not None and f.path is None and len(f.data) < MAX_DUMP_BYTES:
            f.data = (f.data + b.text.encode("utf-8"))[:MAX_DUMP_BYTES]

    def _finish(self) -> None:
        roots = sorted(self._dump_roots)
        if len(roots) > 1:
            self.report.warnings.append(
                f"stack dumps under {len(roots)} folders ({', '.join(r or '.' for r in roots[:4])}): analysed together")
        if roots:
            self._dumps.where = os.path.join(self.path, roots[0]) if roots[0] else self.path
        if len(self._feeds) > 1:
            first = min(self._feeds, key=lambda f: feed_preference(f.name))
            self.report.warnings.append(
                f"{len(self._feeds)} timing feeds ({', '.join(f.name for f in self._feeds[:4])}); "
                f"the slow analysis reads the JSONL ones together when each holds other ranks (a file per rank), "
                f"else {first.name}")

    # -- what was captured -----------------------------------------------------------------------------

    def dumps(self) -> StackDumps | None:
        """The stack snapshots met by :meth:`blocks` (None without any)."""
        return self._dumps if self._dumps.snapshots else None

    def feeds(self) -> list[FeedMember]:
        """The timing feeds met by :meth:`blocks`, in bundle order."""
        return list(self._feeds)


def open_bundle(path: str | os.PathLike[str], limits: IngestLimits | None = None,
                exclude: list[str] | None = None, report: InputReport | None = None, dumps_only: bool = False) -> Bundle:
    """The :class:`Bundle` at ``path`` (directory, archive or one file). ``exclude``: fnmatch patterns on
    member names or base names, added to the bundle's own ``.diagignore``. Does not read the members yet
    (see :meth:`Bundle.blocks`). ``dumps_only``: the bundle is known to hold stack dumps (``diag hang``)."""
    p = os.fspath(path)
    rep = report if report is not None else InputReport(path=p)
    patterns = [*(exclude or []), *read_diagignore(p, rep, limits)] if os.path.exists(p) else list(exclude or [])
    return Bundle(p, rep, limits, patterns, dumps_only=dumps_only)


__all__ = ["DIAGIGNORE", "MAX_DUMP_BYTES", "Bundle", "excluded_by", "open_bundle", "read_diagignore"]
