"""Periodic stack snapshots of every rank: ``py-spy dump`` (text and ``--json``), else faulthandler.

Layout written under ``<out>/dumps/`` (see ``eval/lab/README.md``)::

    dumps/ranks.json            {"<rank>": {"node", "pid", "local_rank"}}
    dumps/index.json            one entry per snapshot: index, time, phase, method, per-rank status
    dumps/0000/rank-<R>.txt     text dump of rank R
    dumps/0000/rank-<R>.json    JSON dump of rank R (py-spy's schema; same schema for the fallback)

With py-spy, the text and the JSON dump of one rank are two consecutive ``py-spy dump`` calls
(py-spy cannot attach twice at once), so they may differ slightly for a running rank; for a hung
rank they agree. Without ptrace (py-spy missing or refused) each rank is sent ``SIGUSR1``, on
which :mod:`diag_service.lab.train` has registered ``faulthandler.dump_traceback``; the text is
faulthandler's own output and the JSON is parsed from it (thread names, ``active`` and
``owns_gil`` are then ``null``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RankProc:
    """Where one rank runs: its node name, OS pid and local rank on that node."""

    node: str
    pid: int
    local_rank: int


def find_pyspy() -> str | None:
    """Path of the ``py-spy`` executable (next to this interpreter first, then ``PATH``)."""
    local = Path(sys.executable).parent / "py-spy"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("py-spy")


_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+) \(most recent call first\):")
_FH_FRAME = re.compile(r'^\s+File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<name>.*)$')


def parse_faulthandler(text: str, pid: int) -> list[dict[str, Any]]:
    """Turn ``faulthandler.dump_traceback`` text into py-spy's ``dump --json`` schema."""
    threads: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _FH_THREAD.match(line)
        if m:
            cur = {
                "pid": pid,
                "thread_id": int(m.group(2), 16),
                "thread_name": None,
                "os_thread_id": None,
                "active": None,
                "owns_gil": None,
                "current": m.group(1) == "Current thread",
                "frames": [],
                "process_info": None,
            }
            threads.append(cur)
            continue
        f = _FH_FRAME.match(line)
        if f and cur is not None:
            cur["frames"].append(
                {
                    "name": f.group("name"),
                    "filename": f.group("file"),
                    "module": None,
                    "short_filename": Path(f.group("file")).name,
                    "line": int(f.group("line")),
                    "locals": None,
                }
            )
    return threads


class StackDumper:
    """Takes numbered snapshots of all ranks into ``dumps_dir``.

    ``fh_dir`` holds the per-rank faulthandler files (``faulthandler-rank-<R>.txt``) that the
    training script appends to on ``SIGUSR1``. ``timeout_s`` bounds each py-spy call (seconds).
    """

    def __init__(self, dumps_dir: Path, fh_dir: Path, timeout_s: float = 10.0, force_fallback: bool = False):
        self.dumps_dir = dumps_dir
        self.fh_dir = fh_dir
        self.timeout_s = timeout_s
        self.pyspy = None if force_fallback else find_pyspy()
        self.method = "py-spy" if self.pyspy else "faulthandler"
        self.fallback_reason: str | None = None if self.pyspy else ("forced" if force_fallback else "py-spy not installed")
        self.index: list[dict[str, Any]] = []

    @property
    def count(self) -> int:
        """Number of snapshots taken so far."""
        return len(self.index)

    def write_ranks(self, ranks: Mapping[int, RankProc]) -> None:
        """Write ``dumps/ranks.json``: ``{"<rank>": {"node", "pid", "local_rank"}}``."""
        self.dumps_dir.mkdir(parents=True, exist_ok=True)
        data = {str(r): {"node": p.node, "pid": p.pid, "local_rank": p.local_rank} for r, p in sorted(ranks.items())}
        (self.dumps_dir / "ranks.json").write_text(json.dumps(data, indent=2) + "\n")

    def snapshot(self, ranks: Mapping[int, RankProc], phase: str) -> dict[str, Any]:
        """Dump every rank once into ``dumps/<index:04d>/``; return (and index) the entry."""
        idx = len(self.index)
        snap_dir = self.dumps_dir / f"{idx:04d}"
        snap_dir.mkdir(parents=True, exist_ok=True)
        t = time.time()
        status: dict[str, str] = {}
        if self.method == "py-spy":
            with ThreadPoolExecutor(max_workers=max(1, len(ranks))) as ex:
                results = dict(zip(ranks, ex.map(lambda r: self._pyspy_rank(ranks[r], r, snap_dir), ranks), strict=True))
            status = {str(r): s for r, s in results.items()}
            if results and all(s.startswith("error") for s in results.values()) and any(_alive(p.pid) for p in ranks.values()):
                self.method = "faulthandler"
                self.fallback_reason = next(iter(results.values()))
        if self.method == "faulthandler":
            status = self._faulthandler_all(ranks, snap_dir)
        entry = {"index": idx, "dir": f"{idx:04d}", "time": t, "phase": phase, "method": self.method, "ranks": status}
        if self.fallback_reason:
            entry["fallback_reason"] = self.fallback_reason
        self.index.append(entry)
        self.write_index()
        return entry

    def write_index(self) -> None:
        """Write ``dumps/index.json`` (the list of snapshots so far)."""
        self.dumps_dir.mkdir(parents=True, exist_ok=True)
        (self.dumps_dir / "index.json").write_text(json.dumps(self.index, indent=2) + "\n")

    def _pyspy_rank(self, proc: RankProc, rank: int, snap_dir: Path) -> str:
        assert self.pyspy is not None
        outcome = "ok"
        for ext, extra in (("txt", []), ("json", ["--json"])):
            try:
                r = subprocess.run(
                    [self.pyspy, "dump", *extra, "--pid", str(proc.pid)],
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                outcome = "error: py-spy timed out"
                continue
            if r.returncode != 0:
                outcome = f"error: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode}"
                continue
            (snap_dir / f"rank-{rank}.{ext}").write_text(r.stdout)
        return outcome

    def _faulthandler_all(self, ranks: Mapping[int, RankProc], snap_dir: Path) -> dict[str, str]:
        sizes: dict[int, int] = {}
        status: dict[str, str] = {}
        for r, p in ranks.items():
            f = self.fh_dir / f"faulthandler-rank-{r}.txt"
            sizes[r] = f.stat().st_size if f.exists() else 0
            try:
                os.kill(p.pid, signal.SIGUSR1)
            except ProcessLookupError:
                status[str(r)] = "error: process gone"
        deadline = time.time() + 2.0
        pending = {r for r in ranks if str(r) not in status}
        last: dict[int, int] = {}
        while pending and time.time() < deadline:
            time.sleep(0.1)
            for r in list(pending):
                f = self.fh_dir / f"faulthandler-rank-{r}.txt"
                size = f.stat().st_size if f.exists() else 0
                if size > sizes[r] and last.get(r) == size:
                    pending.discard(r)
                last[r] = size
        for r, p in ranks.items():
            if str(r) in status:
                continue
            f = self.fh_dir / f"faulthandler-rank-{r}.txt"
            with open(f, "rb") as fh:
                fh.seek(sizes[r])
                text = fh.read().decode("utf-8", "replace")
            if not text.strip():
                status[str(r)] = "error: no faulthandler output"
                continue
            (snap_dir / f"rank-{r}.txt").write_text(text)
            (snap_dir / f"rank-{r}.json").write_text(json.dumps(parse_faulthandler(text, p.pid), indent=2))
            status[str(r)] = "ok"
        return status


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main_thread_frames(threads: list[dict[str, Any]]) -> list[str]:
    """Frame names (innermost first) of the main thread in a py-spy/fallback JSON dump.

    The main thread is the one named ``MainThread``, else (faulthandler dumps carry no names)
    the one whose outermost frame is ``<module>``; ``[]`` if neither is found.
    """
    for t in threads:
        if t.get("thread_name") == "MainThread":
            return [f["name"] for f in t.get("frames", [])]
    for t in threads:
        frames = t.get("frames", [])
        if frames and frames[-1]["name"] == "<module>":
            return [f["name"] for f in frames]
    return []
