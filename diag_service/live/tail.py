"""Follow the log files of a folder as they grow: new complete lines per file, by offset.

A file that shrinks (truncated, or replaced by rotation) is read again from its start, flagged
``restarted``. Only whole lines are returned; a line without its newline waits for the next read unless
it exceeds :data:`MAX_PARTIAL` bytes (then it is returned as it is). Each :meth:`LogTailer.poll` reads at
most ``max_bytes_per_file`` bytes of each file, so one chatty rank cannot starve the others; the rest
comes at the next poll. Files are found by name (:data:`LOG_NAME`) at any depth; symbolic links and
anything but regular files are skipped, and nothing outside the folder is opened.

With :meth:`LogTailer.watch` (``watchfiles``: inotify on Linux) a poll reads only the files that changed,
and walks the whole folder only every ``rescan_s`` seconds as a safety net (a missed notification, a
file system without notifications); without it every poll walks the folder.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from diag_service.fsutil import open_regular

#: Names of files followed: torchrun's ``--log-dir`` tree (``<run>/attempt_<n>/<local_rank>/stdout.log``,
#: ``stderr.log``, and ``error.json``, the failed worker's exception with its time, written by
#: torch.distributed.elastic's ``@record``), consoles, ``*.out`` / ``*.err`` of Slurm, and a timing feed
#: (``timing*.jsonl``).
LOG_NAME = re.compile(
    r"(?i)(?:\.(?:log|out|err|txt)|^(?:stdout|stderr)(?:\.\w+)?|^timing[^/]*\.jsonl|(?:^|/)error\.json)$")
#: A partial line longer than this is returned without waiting for its newline (bytes).
MAX_PARTIAL = 64 << 10
#: Files followed at most (a folder with more is a misconfiguration; the first ones by name are kept).
MAX_FILES = 4096


@dataclass
class Chunk:
    """New text of one file: ``rel`` (POSIX path relative to the folder), ``offset`` (byte offset of the
    text in the file), ``text`` (decoded as UTF-8 with replacement), ``restarted`` (the file started over)."""

    rel: str
    offset: int
    text: str
    restarted: bool = False


@dataclass
class _File:
    offset: int = 0  # bytes consumed (returned as lines)
    ino: int = 0
    restarted: bool = False
    behind: bool = False  # more bytes than one read's budget were waiting


@dataclass
class LogTailer:
    """Follow ``root``'s log files. ``max_bytes_per_file``: read budget of one file per poll."""

    root: Path
    max_bytes_per_file: int = 1 << 20
    rescan_s: float = 10.0
    files: dict[str, _File] = field(default_factory=dict)
    _changed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _watching: bool = False
    _rescan_now: bool = False
    _last_scan: float = float("-inf")  # never walked: the first poll walks (monotonic time may be < rescan_s)

    def watch(self, stop: threading.Event) -> bool:
        """Follow changes with ``watchfiles`` in a background thread until ``stop`` is set. Returns False
        (and polls keep walking the folder) when watchfiles is not installed or the folder cannot be watched."""
        try:
            import watchfiles
        except ImportError:
            return False
        if not self.root.is_dir():
            return False
        root = str(self.root.resolve())

        def run() -> None:
            try:
                for changes in watchfiles.watch(root, stop_event=stop, yield_on_timeout=True, rust_timeout=1000,
                                                debounce=50, step=20, raise_interrupt=False):
                    rels = {os.path.relpath(path, root).replace(os.sep, "/") for _, path in changes}
                    # a new folder's first files may be written before its watch is in place: walk it all
                    new_dir = any(os.path.isdir(path) for _, path in changes)
                    with self._lock:
                        self._changed.update(r for r in rels if not r.startswith("../") and LOG_NAME.search(r))
                        self._rescan_now = self._rescan_now or new_dir
            except Exception as exc:  # noqa: BLE001 - fall back to walking the folder
                logging.getLogger("diag.watch").warning("file watching stopped (%s); polling instead", exc)
                self._watching = False

        self._watching = True
        threading.Thread(target=run, name="diag-watch-files", daemon=True).start()
        return True

    def scan(self) -> list[str]:
        """Relative paths of the files followed now (found by walking ``root``; links not followed)."""
        found: list[str] = []
        root = str(self.root)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                if LOG_NAME.search(name):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
                    if len(found) >= MAX_FILES:
                        return found
        return found

    def poll(self, rels: list[str] | None = None) -> list[Chunk]:
        """New complete lines of every followed file (or of ``rels`` only), at most one chunk per file."""
        if rels is None:
            rels = self._due()
        out: list[Chunk] = []
        for rel in rels:
            chunk = self._read(rel)
            if chunk is not None:
                out.append(chunk)
        return out

    def _due(self) -> list[str]:
        """The files to read now: those notified as changed (and those not read to their end yet), or all
        of them when not watching or at a rescan."""
        now = time.monotonic()
        with self._lock:
            rescan, self._rescan_now = self._rescan_now, False
        if rescan or not self._watching or now - self._last_scan >= self.rescan_s:
            self._last_scan = now
            with self._lock:
                self._changed.clear()
            return self.scan()
        with self._lock:
            changed, self._changed = self._changed, set()
        behind = [rel for rel, f in self.files.items() if f.behind]
        return sorted(changed.union(behind))

    def _read(self, rel: str) -> Chunk | None:
        try:  # a link (last component) or anything but a regular file is refused without a byte read
            fh = open_regular(os.path.join(str(self.root), rel))
        except OSError:
            return None
        with fh:
            st = os.fstat(fh.fileno())
            f = self.files.get(rel)
            if f is None:
                f = self.files[rel] = _File(ino=st.st_ino)
            if st.st_ino != f.ino or st.st_size < f.offset:  # rotated or truncated: start over
                f.ino, f.offset, f.restarted = st.st_ino, 0, True
            if st.st_size == f.offset:
                return None
            fh.seek(f.offset)
            data = fh.read(min(self.max_bytes_per_file, st.st_size - f.offset))
            f.behind = st.st_size - f.offset > len(data)
        end = data.rfind(b"\n") + 1
        if rel.rsplit("/", 1)[-1] == "error.json" and not f.behind:
            end = len(data)  # one JSON document written at once, often without a final newline
        if end == 0:
            if len(data) < MAX_PARTIAL:
                return None
            end = len(data)
        chunk = Chunk(rel=rel, offset=f.offset, text=data[:end].decode("utf-8", "replace"), restarted=f.restarted)
        f.offset += end
        f.restarted = False
        return chunk


__all__ = ["LOG_NAME", "Chunk", "LogTailer"]
