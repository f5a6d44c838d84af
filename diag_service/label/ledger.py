"""The progress ledger (SQLite) and the atomic Parquet parts of an output folder.

An output folder ``OUT`` (``labels.parquet``) holds::

    part-00000.parquet ...   the rows, each job in exactly one part (a Parquet dataset: read the folder)
    _ledger.sqlite           every job, its state, its row once labelled, which part holds it
    _ledger.lock             held (filelock) by the one run writing this folder
    _summary.json, _summary.md, _SUCCESS   written when a run completes

Why no row is lost or duplicated, whatever kills the run (SIGKILL included):

- A job's row is committed to the ledger (one transaction per batch) before anything else is
  done with it; a job not committed is labelled again by the next run. A row arriving twice (a
  retried task) is ignored: the update only applies to a job still ``pending``.
- A part is first *planned* in the ledger (its jobs assigned, state ``writing``), then written to a
  temporary file, fsynced, renamed into place, and marked ``done``. On open, the ledger is
  reconciled with the folder: temporary files, part files not ``done`` in the ledger and parts
  whose file is gone are removed and their jobs returned to the unwritten pool, to be written
  into a new part. So the folder only ever holds complete parts, each listed once in the ledger.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from diag_service.errors import DiagError, ErrorKind
from diag_service.fsutil import fsync_dir
from diag_service.label.models import LABEL_SCHEMA, ClusterSummary, Job, LabelRow

LEDGER = "_ledger.sqlite"
LOCK = "_ledger.lock"
SUMMARY_JSON = "_summary.json"
SUMMARY_MD = "_summary.md"
SUCCESS = "_SUCCESS"
_PART = re.compile(r"^part-(\d{5,})\.parquet$")
_OURS = re.compile(
    r"^(part-\d{5,}\.parquet(\.tmp)?|_ledger\.(sqlite|sqlite-wal|sqlite-shm|lock)|_summary\.(json|md)(\.tmp)?|_SUCCESS(\.tmp)?)$"
)

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    job TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    row TEXT,
    template_id TEXT,
    part INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, part);
CREATE INDEX IF NOT EXISTS jobs_part ON jobs(part);
CREATE TABLE IF NOT EXISTS parts (
    part INTEGER PRIMARY KEY,
    state TEXT NOT NULL,
    rows INTEGER NOT NULL,
    summaries TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS clusters (
    template_id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    model TEXT
);
"""


class LedgerError(DiagError, RuntimeError):
    """The output folder cannot be used: another run holds it, it is not ours, or it belongs to another archive."""

    kind = ErrorKind.INPUT


def part_name(n: int) -> str:
    return f"part-{n:05d}.parquet"


def is_ours(out: Path) -> bool:
    """Whether ``out`` is an output folder of ``diag label`` (it has a ledger)."""
    return (out / LEDGER).is_file()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``path`` through a fsynced temporary file renamed into place."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class Ledger:
    """The SQLite ledger of one output folder, held exclusively while open (use as a context manager).

    Raises :class:`LedgerError` when another process holds the folder, or the folder exists with
    other files in it and no ledger (it is not ours to write into).
    """

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise LedgerError(f"{self.out} exists and is not a folder")
        if self.out.is_dir() and not is_ours(self.out) and any(
            not f.name.startswith(".") for f in self.out.iterdir()
        ):
            raise LedgerError(f"{self.out} is not empty and is not a `diag label` output folder; choose another --out")
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.out / LOCK))
        try:
            self._lock.acquire(timeout=0)
        except Timeout as exc:
            raise LedgerError(f"another `diag label` run is writing {self.out}") from exc
        self.db = sqlite3.connect(self.out / LEDGER, isolation_level=None, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # durable against a killed process; see reconcile() for power loss
        self.db.executescript(_DDL)

    # -- lifecycle ----------------------------------------------------------------------------------

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            self._lock.release()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on error)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def reset(self) -> None:
        """Forget every job, row, part and summary of this folder (``--fresh``); deletes only files this tool writes."""
        with self.tx() as db:
            for table in ("jobs", "parts", "clusters", "meta"):
                db.execute(f"DELETE FROM {table}")
        for f in self.out.iterdir():
            if f.is_file() and _OURS.match(f.name) and not f.name.startswith("_ledger."):
                f.unlink()

    # -- identity -----------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta").fetchall())

    def bind(self, archive: str, options_fingerprint: str) -> list[str]:
        """Tie the folder to ``archive`` and the row-changing options, or check a resumed run matches.

        Returns notes for the user (empty on a fresh folder). Raises :class:`LedgerError` when the
        folder was written for another archive or other options.
        """
        m = self.meta()
        if not m:
            with self.tx() as db:
                db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
                    ("archive", archive), ("options", options_fingerprint), ("schema", LABEL_SCHEMA),
                    ("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                ])
            return []
        problems = []
        if m.get("archive") != archive:
            problems.append(f"it was started for archive {m.get('archive')}, not {archive}")
        if m.get("options") != options_fingerprint:
            problems.append(f"it was started with options {m.get('options')}, not {options_fingerprint}")
        if m.get("schema") != LABEL_SCHEMA:
            problems.append(f"its rows have layout {m.get('schema')}, this version writes {LABEL_SCHEMA}")
        if problems:
            raise LedgerError(f"cannot resume {self.out}: " + "; ".join(problems) + " (use --fresh to start over)")
        return [f"resuming {self.out} (started {m.get('created')})"]

    # -- jobs ---------------------------------------------------------------------------------------

    def add_jobs(self, jobs: Iterable[Job]) -> int:
        """Add jobs not yet in the ledger (by job id; the first listing wins). Returns how many were new."""
        before = self.db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
        with self.tx() as db:
            db.executemany(
                "INSERT OR IGNORE INTO jobs(job_id, path, job) VALUES (?, ?, ?)",
                ((j.job_id, j.path, j.model_dump_json()) for j in jobs),
            )
        return self.db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] - before

    def pending(self) -> list[Job]:
        """Jobs without a row yet, in listing order."""
        cur = self.db.execute("SELECT job FROM jobs WHERE state = 'pending' ORDER BY seq")
        return [Job.model_validate_json(j) for (j,) in cur]

    def counts(self) -> tuple[int, int]:
        """``(jobs, labelled)``."""
        total, done = self.db.execute("SELECT COUNT(*), COALESCE(SUM(state = 'done'), 0) FROM jobs").fetchone()
        return int(total), int(done)

    def record(self, rows: list[LabelRow]) -> int:
        """Commit one batch of rows in one transaction; rows of jobs already labelled are ignored. Returns how many were new."""
        if not rows:
            return 0
        with self.tx() as db:
            n = 0
            for r in rows:
                cur = db.execute(
                    "UPDATE jobs SET state = 'done', row = ?, template_id = ? WHERE job_id = ? AND state = 'pending'",
                    (r.model_dump_json(exclude={"summary", "summary_source", "model_version"}), r.root_template_id, r.job_id),
                )
                n += cur.rowcount
        return n

    def rows(self, part: int | None = None) -> list[LabelRow]:
        """Labelled rows in listing order (of one part, when given), with their cluster's summary filled in."""
        summaries = self.cluster_summaries()
        if part is None:
            cur = self.db.execute("SELECT row FROM jobs WHERE state = 'done' ORDER BY seq")
        else:
            cur = self.db.execute("SELECT row FROM jobs WHERE part = ? ORDER BY seq", (part,))
        return [_with_summary(LabelRow.model_validate_json(r), summaries) for (r,) in cur]

    # -- clusters -----------------------------------------------------------------------------------

    def cluster_summaries(self) -> dict[str, ClusterSummary]:
        cur = self.db.execute("SELECT template_id, job_id, text, source, model FROM clusters")
        return {t: ClusterSummary(template_id=t, job_id=j, text=x, source=s, model=m) for t, j, x, s, m in cur}

    def clusters_to_summarise(self) -> list[tuple[str, Job, int]]:
        """Clusters (root-cause templates) of labelled jobs without a summary: ``(template_id, representative, size)``.

        Largest cluster first; the representative is the cluster's smallest job id.
        """
        cur = self.db.execute(
            "SELECT j.template_id, MIN(j.job_id), COUNT(*) FROM jobs j LEFT JOIN clusters c ON c.template_id = j.template_id "
            "WHERE j.state = 'done' AND j.template_id IS NOT NULL AND c.template_id IS NULL "
            "GROUP BY j.template_id ORDER BY COUNT(*) DESC, j.template_id"
        )
        out = []
        for tid, jid, size in cur.fetchall():
            (job,) = self.db.execute("SELECT job FROM jobs WHERE job_id = ?", (jid,)).fetchone()
            out.append((tid, Job.model_validate_json(job), int(size)))
        return out

    def add_cluster_summary(self, s: ClusterSummary) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO clusters(template_id, job_id, text, source, model) VALUES (?, ?, ?, ?, ?)",
                (s.template_id, s.job_id, s.text, s.source, s.model),
            )

    # -- parts --------------------------------------------------------------------------------------

    def reconcile(self) -> list[str]:
        """Make the folder and the ledger agree after a crash; returns what was repaired.

        Removes temporary files and part files the ledger does not list as ``done``; returns the
        jobs of unfinished or missing parts to the unwritten pool.
        """
        notes: list[str] = []
        done = {p for (p,) in self.db.execute("SELECT part FROM parts WHERE state = 'done'")}
        for f in sorted(self.out.iterdir()):
            if f.name.endswith(".tmp") and _OURS.match(f.name):
                f.unlink()
                notes.append(f"removed unfinished {f.name}")
                continue
            m = _PART.match(f.name)
            if m and int(m.group(1)) not in done:
                f.unlink()
                notes.append(f"removed {f.name}: not recorded as complete")
        stale = [
            p for (p, state) in self.db.execute("SELECT part, state FROM parts").fetchall()
            if state != "done" or not (self.out / part_name(p)).is_file()
        ]
        if stale:
            with self.tx() as db:
                for p in stale:
                    db.execute("UPDATE jobs SET part = NULL WHERE part = ?", (p,))
                    db.execute("DELETE FROM parts WHERE part = ?", (p,))
                    (self.out / part_name(p)).unlink(missing_ok=True)
            notes.append(f"{len(stale)} unfinished part(s) will be written again: {', '.join(part_name(p) for p in stale)}")
        return notes

    def unwritten(self) -> int:
        """Labelled jobs not yet in a part."""
        return int(self.db.execute("SELECT COUNT(*) FROM jobs WHERE state = 'done' AND part IS NULL").fetchone()[0])

    def write_part(self) -> int | None:
        """Write the labelled jobs not yet in a part into a new part, atomically. Returns its number (``None``: none to write)."""
        with self.tx() as db:
            n_rows = db.execute("SELECT COUNT(*) FROM jobs WHERE state = 'done' AND part IS NULL").fetchone()[0]
            if not n_rows:
                return None
            (last,) = db.execute("SELECT COALESCE(MAX(part), -1) FROM parts").fetchone()
            n = int(last) + 1
            db.execute("UPDATE jobs SET part = ? WHERE state = 'done' AND part IS NULL", (n,))
            db.execute("INSERT INTO parts(part, state, rows) VALUES (?, 'writing', ?)", (n, n_rows))
        self._write_file(n)
        return n

    def refresh_parts(self) -> list[int]:
        """Rewrite (atomically) the parts whose rows' cluster summaries changed since they were written."""
        changed = []
        for (p,) in self.db.execute("SELECT part FROM parts WHERE state = 'done' ORDER BY part").fetchall():
            stored = self.db.execute("SELECT summaries FROM parts WHERE part = ?", (p,)).fetchone()[0]
            if stored != self._summaries_key(p):
                with self.tx() as db:
                    db.execute("UPDATE parts SET state = 'writing' WHERE part = ?", (p,))
                self._write_file(p)
                changed.append(p)
        return changed

    def _summaries_key(self, part: int) -> str:
        cur = self.db.execute(
            "SELECT DISTINCT c.template_id, c.text, c.source, COALESCE(c.model, '') FROM jobs j "
            "JOIN clusters c ON c.template_id = j.template_id WHERE j.part = ? ORDER BY c.template_id",
            (part,),
        )
        return hashlib.sha1(json.dumps(cur.fetchall()).encode("utf-8")).hexdigest()

    def _write_file(self, part: int) -> None:
        from diag_service.label.output import rows_to_parquet_bytes

        data = rows_to_parquet_bytes(self.rows(part))
        atomic_write_bytes(self.out / part_name(part), data)
        with self.tx() as db:
            db.execute("UPDATE parts SET state = 'done', summaries = ? WHERE part = ?", (self._summaries_key(part), part))

    def parts(self) -> list[tuple[int, int]]:
        """``(part, rows)`` of the complete parts."""
        return [(int(p), int(r)) for p, r in self.db.execute("SELECT part, rows FROM parts WHERE state = 'done' ORDER BY part")]


def _with_summary(row: LabelRow, summaries: dict[str, ClusterSummary]) -> LabelRow:
    s = summaries.get(row.root_template_id or "")
    if s is None:
        return row
    versions: dict[str, Any] = json.loads(row.versions)
    if s.model:
        versions["model"] = s.model
    return row.model_copy(update={
        "summary": s.text, "summary_source": s.source, "model_version": s.model,
        "versions": json.dumps(versions, sort_keys=True),
    })
