"""Parse one rank's stack dump: py-spy text, py-spy ``--json``, or Python ``faulthandler`` text.

Frames are kept innermost first, as all three formats print them. Every parser is tolerant:
unknown lines are skipped, a truncated dump yields the frames read so far, and a dump with no
thread at all raises :class:`DumpError` with the reason. Sizes are bounded
(:data:`diag_service.limits.LIMITS`): the first ``max_threads`` threads of a dump are read, and of each
the innermost ``max_frames`` frames (the outer ones are counted in :attr:`ThreadStack.dropped_frames`);
line numbers have at most 9 digits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from diag_service.errors import DiagError, ErrorKind
from diag_service.limits import LIMITS

PYSPY_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \((idle|active|gil)[^)]*\)(?:: "(?P<name>[^"]*)")?')
PYSPY_FRAME = re.compile(r"^\s+(?P<name>\S.*?) \((?P<file>[^()]*?):(?P<line>\d{1,9})\)\s*$")
PYSPY_PROCESS = re.compile(r"^Process (\d+):")
FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9A-Fa-f]+) \(most recent call first\):")
FH_FRAME = re.compile(r'^\s+File "(?P<file>[^"]*)", line (?P<line>\d{1,9}) in (?P<name>.+?)\s*$')


class DumpError(DiagError, ValueError):
    """The dump holds no parseable thread (empty, binary, or not a stack dump)."""

    kind = ErrorKind.INPUT


@dataclass(frozen=True, slots=True)
class Frame:
    name: str
    file: str
    line: int | None

    def short(self) -> str:
        return f"{self.name} ({self.file}{':' + str(self.line) if self.line is not None else ''})"


@dataclass(slots=True)
class ThreadStack:
    name: str | None
    ident: str | None
    frames: list[Frame] = field(default_factory=list)
    is_main: bool = False
    idle: bool | None = None
    dropped_frames: int = 0  # outer frames beyond LIMITS.max_frames, not kept

    def add(self, frame: Frame) -> None:
        """Append an (outer) frame, up to ``LIMITS.max_frames``; count the rest."""
        if len(self.frames) < LIMITS.max_frames:
            self.frames.append(frame)
        else:
            self.dropped_frames += 1


def _short_file(path: str) -> str:
    """Path relative to site-packages or the Python library, as py-spy's ``short_filename``."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    m = re.search(r"/lib/python\d\.\d+/(.+)$", path)
    if m:
        return m.group(1)
    return path.lstrip("./")


def _mark_main(threads: list[ThreadStack], pid: str | None) -> None:
    for t in threads:
        if t.name == "MainThread" or (pid is not None and t.ident == pid):
            t.is_main = True
            return
    for t in threads:  # faulthandler: the thread that runs the entry script
        if t.frames and t.frames[-1].name == "<module>":
            t.is_main = True
            return
    if threads:
        threads[0].is_main = True


def _parse_pyspy_json(text: str) -> list[ThreadStack]:
    doc = json.loads(text)
    if isinstance(doc, dict):
        doc = doc.get("threads", [doc])
    if not isinstance(doc, list):
        raise DumpError("JSON dump is not a list of threads")
    threads: list[ThreadStack] = []
    pid = None
    for t in doc:
        if not isinstance(t, dict):
            continue
        if len(threads) >= LIMITS.max_threads:
            break
        ident = t.get("os_thread_id")
        pid = str(t.get("pid")) if t.get("pid") is not None else pid
        active = t.get("active")
        name = t.get("thread_name")
        th = ThreadStack(name=str(name) if name is not None else None, ident=str(ident) if ident is not None else None,
                         idle=(not active) if isinstance(active, bool) else None)
        frames = t.get("frames")
        for f in frames if isinstance(frames, list) else []:
            if not isinstance(f, dict) or "name" not in f:
                continue
            file = f.get("short_filename") or _short_file(str(f.get("filename") or "?"))
            line = f.get("line")
            th.add(Frame(str(f["name"]), str(file), line if isinstance(line, int) and not isinstance(line, bool)
                         and 0 <= line < 10**9 else None))
        threads.append(th)
        if t.get("current") is True and threads[-1].name is None:
            threads[-1].name = "current"
    _mark_main(threads, pid)
    return threads


def _parse_text(text: str) -> list[ThreadStack]:
    threads: list[ThreadStack] = []
    pid = None
    cur: ThreadStack | None = None
    for line in text.splitlines():
        m = PYSPY_PROCESS.match(line)
        if m:
            pid = m.group(1)
            continue
        m = PYSPY_THREAD.match(line)
        if m:
            if len(threads) >= LIMITS.max_threads:
                break
            cur = ThreadStack(name=m.group("name"), ident=m.group(1), idle=m.group(2) == "idle")
            threads.append(cur)
            continue
        m = FH_THREAD.match(line)
        if m:
            if len(threads) >= LIMITS.max_threads:
                break
            cur = ThreadStack(name="current" if m.group(1) == "Current thread" else None, ident=m.group(2))
            threads.append(cur)
            continue
        if cur is None:
            continue
        m = FH_FRAME.match(line)
        if m:
            cur.add(Frame(m.group("name"), _short_file(m.group("file")), int(m.group("line"))))
            continue
        m = PYSPY_FRAME.match(line)
        if m:
            cur.add(Frame(m.group("name"), m.group("file"), int(m.group("line"))))
    _mark_main(threads, pid)
    return threads


def parse_dump(data: bytes | str) -> list[ThreadStack]:
    """Parse a dump (format detected from content). Raises :class:`DumpError` if no thread is found."""
    if isinstance(data, bytes):
        if b"\x00" in data[:4096]:
            raise DumpError("binary content")
        text = data.decode("utf-8", errors="replace")
    else:
        text = data
    stripped = text.lstrip()
    if not stripped:
        raise DumpError("empty dump")
    threads: list[ThreadStack] = []
    if stripped[0] in "[{":
        try:
            threads = _parse_pyspy_json(stripped)
        except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
            threads = []  # truncated JSON: fall back to nothing rather than guess
            raise DumpError("truncated or invalid JSON dump") from None
    else:
        threads = _parse_text(text)
    if not threads or not any(t.frames for t in threads):
        raise DumpError("no thread with frames in the dump")
    return threads
