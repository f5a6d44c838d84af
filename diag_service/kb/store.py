"""SQLite store of incident records, their vectors, and operator feedback.

The store is the source of truth; the FAISS index is derived from it and can always be rebuilt.
Records are never deleted: building from YAML inserts or updates seed records by id, feedback
inserts new records or increments the count of an existing one. Feedback rows are only inserted.

Tables::

    meta(key, value)            schema, model name, dimension, vector epoch, novelty calibration
    records(rowid, id, source, category, family, record_json, text, vector, count, created, updated)
    feedback(id, created, job_id, verdict, diagnosed_category, category, record_id, merged, score,
             root_cause, action, level, diagnosis_json)

``rowid`` is the FAISS id. ``vector`` is float32 little-endian ``dim`` values. ``meta.epoch`` is
incremented whenever a stored vector changes (re-embedding, an updated seed record), which makes
every index built before it stale; new rows only extend the index.

Connections use WAL (readers never block the writer, nor the writer readers), ``synchronous=FULL``
and a 30 s busy timeout. Every write is one transaction.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from diag_service.domain import Category
from diag_service.errors import ErrorKind
from diag_service.kb.records import IncidentRecord, KBError

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL CHECK (source IN ('seed', 'feedback', 'synthetic')),
    category TEXT NOT NULL,
    family TEXT,
    record_json TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    job_id TEXT,
    verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'corrected')),
    diagnosed_category TEXT NOT NULL,
    category TEXT NOT NULL,
    record_id TEXT NOT NULL,
    merged INTEGER NOT NULL,
    score REAL,
    root_cause TEXT NOT NULL,
    action TEXT NOT NULL,
    level TEXT NOT NULL,
    diagnosis_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_record ON feedback(record_id);
"""


class StoreError(KBError):
    """The SQLite store cannot be opened or is not a knowledge-base store."""


class ModelMismatch(KBError):
    """The store was embedded with another model or dimension than the one offered."""

    kind = ErrorKind.CONFIG


class StoredRecord(BaseModel):
    """A record as stored: the incident plus its row id, origin, embedded text and count."""

    rowid: int
    source: str
    record: IncidentRecord
    text: str
    count: int


class Store:
    """One SQLite file. Opening creates the schema if needed; it never modifies existing rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.connect() as db:
                db.executescript(_SCHEMA)
                row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if row is None:
                    db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                    db.execute("INSERT OR IGNORE INTO meta VALUES ('epoch', '0')")
                elif row[0] != SCHEMA_VERSION:
                    raise StoreError(f"{self.path}: store schema {row[0]} is not supported (expected {SCHEMA_VERSION})")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite knowledge-base store ({exc})") from exc

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode; use ``with tx(db):`` for writes."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            yield db
        finally:
            db.close()

    @staticmethod
    @contextmanager
    def tx(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on error)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def reader(self) -> sqlite3.Connection:
        """This thread's long-lived read connection (autocommit; each statement sees the latest commit)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._local.db = db
        return db

    def state(self) -> tuple[int, str | None, int | None, int]:
        """``(vector epoch, model, dim, highest rowid)`` in one read, for the per-search freshness check."""
        row = self.reader().execute(
            "SELECT (SELECT value FROM meta WHERE key='epoch'), (SELECT value FROM meta WHERE key='model'), "
            "(SELECT value FROM meta WHERE key='dim'), (SELECT COALESCE(MAX(rowid), 0) FROM records)"
        ).fetchone()
        return int(row[0] or 0), row[1], int(row[2]) if row[2] is not None else None, int(row[3])

    # -- meta ---------------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.reader().execute("SELECT key, value FROM meta").fetchall())

    @staticmethod
    def set_meta(db: sqlite3.Connection, **values: str) -> None:
        for k, v in values.items():
            db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (k, str(v)))

    def check_model(self, model: str, dim: int) -> None:
        """Raise :class:`ModelMismatch` if the store holds vectors of another model or dimension."""
        m = self.meta()
        if "model" in m and (m["model"] != model or int(m["dim"]) != dim):
            raise ModelMismatch(
                f"the knowledge base at {self.path} was embedded with model {m['model']!r} (dim {m['dim']}); "
                f"the embedder offered is {model!r} (dim {dim}). Use the same model, or re-embed every record "
                "with `diag kb build --reembed` (records are kept)."
            )

    # -- records ------------------------------------------------------------------------------------

    def count(self) -> int:
        with self.connect() as db:
            return db.execute("SELECT COUNT(*) FROM records").fetchone()[0]

    def max_rowid(self) -> int:
        with self.connect() as db:
            return db.execute("SELECT COALESCE(MAX(rowid), 0) FROM records").fetchone()[0]

    def vectors(self, after_rowid: int = 0, dim: int | None = None, batch: int = 50_000) -> tuple[np.ndarray, np.ndarray]:
        """Row ids (int64) and vectors (float32 ``(n, dim)``) of every record with ``rowid > after_rowid``."""
        ids: list[np.ndarray] = []
        vecs: list[np.ndarray] = []
        with self.connect() as db:
            cur = db.execute("SELECT rowid, vector FROM records WHERE rowid > ? ORDER BY rowid", (after_rowid,))
            while True:
                rows = cur.fetchmany(batch)
                if not rows:
                    break
                ids.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
                vecs.append(np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1))
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim or 0), dtype=np.float32)
        return np.concatenate(ids), np.ascontiguousarray(np.concatenate(vecs), dtype=np.float32)

    def get_by_rowids(self, rowids: list[int]) -> dict[int, StoredRecord]:
        if not rowids:
            return {}
        q = ",".join("?" * len(rowids))
        rows = self.reader().execute(
            f"SELECT rowid, source, record_json, text, count FROM records WHERE rowid IN ({q})", rowids
        ).fetchall()
        return {r[0]: StoredRecord(rowid=r[0], source=r[1], record=IncidentRecord.model_validate_json(r[2]), text=r[3],
                                   count=r[4]) for r in rows}

    def get(self, record_id: str) -> StoredRecord | None:
        with self.connect() as db:
            r = db.execute("SELECT rowid, source, record_json, text, count FROM records WHERE id=?", (record_id,)).fetchone()
        if r is None:
            return None
        return StoredRecord(rowid=r[0], source=r[1], record=IncidentRecord.model_validate_json(r[2]), text=r[3], count=r[4])

    def all_records(self) -> list[StoredRecord]:
        with self.connect() as db:
            rows = db.execute("SELECT rowid, source, record_json, text, count FROM records ORDER BY rowid").fetchall()
        return [StoredRecord(rowid=r[0], source=r[1], record=IncidentRecord.model_validate_json(r[2]), text=r[3], count=r[4])
                for r in rows]

    @staticmethod
    def upsert(db: sqlite3.Connection, rec: IncidentRecord, source: str, text: str, vector: np.ndarray) -> str:
        """Insert ``rec`` or update the row with its id. Returns ``"added"``, ``"updated"`` or ``"unchanged"``.

        An update that changes the vector bumps ``meta.epoch``. Counts are kept.
        """
        blob = np.ascontiguousarray(vector, dtype="<f4").tobytes()
        body = rec.model_dump_json()
        now = time.time()
        old = db.execute("SELECT record_json, text, vector FROM records WHERE id=?", (rec.id,)).fetchone()
        if old is None:
            db.execute(
                "INSERT INTO records (id, source, category, family, record_json, text, vector, count, created, updated) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
                (rec.id, source, rec.category.value, rec.family, body, text, blob, now, now),
            )
            return "added"
        if old[0] == body and old[1] == text and old[2] == blob:
            return "unchanged"
        db.execute(
            "UPDATE records SET category=?, family=?, record_json=?, text=?, vector=?, updated=? WHERE id=?",
            (rec.category.value, rec.family, body, text, blob, now, rec.id),
        )
        if old[2] != blob:
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='epoch'")
        return "updated"

    @staticmethod
    def insert_many(db: sqlite3.Connection, rows: list[tuple[str, str, str, str | None, str, str, bytes]]) -> int:
        """Bulk insert of new records: ``(id, source, category, family, record_json, text, vector_bytes)`` each.

        For loaders and benchmarks that produce validated JSON themselves; ids must be new (an existing
        id raises ``sqlite3.IntegrityError`` and the caller's transaction rolls back). Returns the count.
        """
        now = time.time()
        db.executemany(
            "INSERT INTO records (id, source, category, family, record_json, text, vector, count, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
            ((*r, now, now) for r in rows),
        )
        return len(rows)

    @staticmethod
    def bump_count(db: sqlite3.Connection, record_id: str) -> int:
        db.execute("UPDATE records SET count = count + 1, updated=? WHERE id=?", (time.time(), record_id))
        return db.execute("SELECT count FROM records WHERE id=?", (record_id,)).fetchone()[0]

    @staticmethod
    def add_feedback(
        db: sqlite3.Connection, *, job_id: str | None, verdict: str, diagnosed_category: Category, category: Category,
        record_id: str, merged: bool, score: float | None, root_cause: str, action: str, level: str, diagnosis_json: str,
    ) -> int:
        cur = db.execute(
            "INSERT INTO feedback (created, job_id, verdict, diagnosed_category, category, record_id, merged, score, "
            "root_cause, action, level, diagnosis_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (time.time(), job_id, verdict, diagnosed_category.value, category.value, record_id, int(merged), score,
             root_cause, action, level, diagnosis_json),
        )
        return int(cur.lastrowid or 0)

    def feedback_rows(self) -> list[dict]:
        with self.connect() as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM feedback ORDER BY id").fetchall()]

    def families(self) -> list[tuple[int, str | None, str]]:
        """``(rowid, family, category)`` of every record."""
        with self.connect() as db:
            return db.execute("SELECT rowid, family, category FROM records ORDER BY rowid").fetchall()

