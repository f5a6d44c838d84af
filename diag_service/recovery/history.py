"""Recovery history in SQLite: restarts per job, faults per node across jobs, append-only audit log.

The audit table is only ever inserted into (no UPDATE or DELETE statement exists in this module);
a recommendation, an execution and an outcome are each a row. ``executions`` holds one claim per
executed incident and plan (:meth:`History.claim_execution`), so none is executed twice. ``record_recommendation`` is
idempotent on the plan's idempotency key: the same diagnosis twice is recorded once.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from diag_service.domain import Category, Diagnosis, RecoveryLevel, RecoveryPlan

_SCHEMA = """
CREATE TABLE IF NOT EXISTS restarts (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, ts REAL NOT NULL, level TEXT NOT NULL,
    category TEXT NOT NULL, signature_id TEXT, nodes TEXT NOT NULL, idempotency_key TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS restarts_job ON restarts(job_id);
CREATE TABLE IF NOT EXISTS node_faults (
    id INTEGER PRIMARY KEY, node TEXT NOT NULL, ts REAL NOT NULL, job_id TEXT, category TEXT NOT NULL,
    signature_id TEXT, idempotency_key TEXT NOT NULL, UNIQUE(node, idempotency_key)
);
CREATE INDEX IF NOT EXISTS node_faults_node ON node_faults(node, ts);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, kind TEXT NOT NULL, job_id TEXT,
    idempotency_key TEXT NOT NULL, payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_key ON audit(idempotency_key, kind);
CREATE TABLE IF NOT EXISTS executions (
    incident TEXT PRIMARY KEY, ts REAL NOT NULL, job_id TEXT, idempotency_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS executions_key ON executions(idempotency_key);
"""
_NODE_FAULT_CATEGORIES = {
    Category.GPU_HARDWARE, Category.NETWORK, Category.INFRASTRUCTURE, Category.STORAGE, Category.FRAMEWORK, Category.UNKNOWN,
}


class History:
    """SQLite-backed history. ``path`` may be ``":memory:"``. Times are unix seconds."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    # -- queries -----------------------------------------------------------------------------------

    def job_restarts(self, job_id: str, category: Category | None = None) -> int:
        if category is None:
            row = self.db.execute("SELECT COUNT(*) FROM restarts WHERE job_id=?", (job_id,)).fetchone()
        else:
            row = self.db.execute(
                "SELECT COUNT(*) FROM restarts WHERE job_id=? AND category=?", (job_id, category.value)
            ).fetchone()
        return int(row[0])

    def node_faults(self, node: str, window_s: float, now: float | None = None) -> int:
        now = time.time() if now is None else now
        row = self.db.execute(
            "SELECT COUNT(*) FROM node_faults WHERE node=? AND ts>=?", (node, now - window_s)
        ).fetchone()
        return int(row[0])

    def lemon_nodes(self, threshold: int, window_s: float, now: float | None = None) -> list[tuple[str, int]]:
        """Nodes with at least ``threshold`` faults (across jobs) in the window, most faults first."""
        now = time.time() if now is None else now
        rows = self.db.execute(
            "SELECT node, COUNT(*) c FROM node_faults WHERE ts>=? GROUP BY node HAVING c>=? ORDER BY c DESC, node",
            (now - window_s, threshold),
        ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    def plan_for(self, key: str) -> RecoveryPlan | None:
        row = self.db.execute(
            "SELECT payload FROM audit WHERE idempotency_key=? AND kind='recommendation' ORDER BY seq LIMIT 1", (key,)
        ).fetchone()
        return RecoveryPlan.model_validate_json(row[0]) if row else None

    def execution_claimed(self, incident: str) -> bool:
        """Whether the execution of a plan for ``incident`` was claimed (:meth:`claim_execution`)."""
        return self.db.execute("SELECT 1 FROM executions WHERE incident=?", (incident,)).fetchone() is not None

    def audit_rows(self) -> list[tuple[int, str, str, str]]:
        return [
            (int(r[0]), r[1], r[2], r[3])
            for r in self.db.execute("SELECT seq, kind, idempotency_key, payload FROM audit ORDER BY seq")
        ]

    # -- writes (inserts only) ---------------------------------------------------------------------

    def record_recommendation(
        self, d: Diagnosis, plan: RecoveryPlan, signature_id: str | None, now: float | None = None
    ) -> bool:
        """Record a recommendation once. Returns False when this key was already recorded."""
        now = time.time() if now is None else now
        job = d.job_id or ""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if self.db.execute(
                "SELECT 1 FROM audit WHERE idempotency_key=? AND kind='recommendation'", (plan.idempotency_key,)
            ).fetchone():
                return False
            self.db.execute(
                "INSERT INTO audit(ts, kind, job_id, idempotency_key, payload) VALUES (?,?,?,?,?)",
                (now, "recommendation", job, plan.idempotency_key, plan.model_dump_json()),
            )
            if plan.level in (RecoveryLevel.L1, RecoveryLevel.L2, RecoveryLevel.L3):
                self.db.execute(
                    "INSERT OR IGNORE INTO restarts(job_id, ts, level, category, signature_id, nodes, idempotency_key) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        job, now, plan.level.value, d.category.value, signature_id,
                        json.dumps(d.faulty_nodes), plan.idempotency_key,
                    ),
                )
            if d.category in _NODE_FAULT_CATEGORIES:
                for node in d.faulty_nodes:
                    self.db.execute(
                        "INSERT OR IGNORE INTO node_faults(node, ts, job_id, category, signature_id, idempotency_key) "
                        "VALUES (?,?,?,?,?,?)",
                        (node, now, job, d.category.value, signature_id, plan.idempotency_key),
                    )
        return True

    def claim_execution(self, incident: str, job_id: str | None, plan: RecoveryPlan, detail: dict[str, object],
                        now: float | None = None) -> bool:
        """Claim the execution of ``plan`` for ``incident`` (a stable name of the fault, e.g. ``live:<job>#<n>``),
        once: when neither this incident nor this plan (its idempotency key) was claimed before, an ``execution``
        row is added to the audit log (``detail`` and the plan's level, rule and commands as its payload) and True
        is returned; else nothing is written and False is returned. The claim survives a restart (the same file),
        so a fault is executed at most once; the caller records the outcome with :meth:`record_outcome`."""
        now = time.time() if now is None else now
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if self.db.execute("SELECT 1 FROM executions WHERE incident=? OR idempotency_key=?",
                               (incident, plan.idempotency_key)).fetchone():
                return False
            self.db.execute("INSERT INTO executions(incident, ts, job_id, idempotency_key) VALUES (?,?,?,?)",
                            (incident, now, job_id, plan.idempotency_key))
            payload = {"incident": incident, **detail, "level": plan.level.value, "rule_id": plan.rule_id,
                       "platform": plan.platform, "commands": plan.commands}
            self.db.execute(
                "INSERT INTO audit(ts, kind, job_id, idempotency_key, payload) VALUES (?,?,?,?,?)",
                (now, "execution", job_id, plan.idempotency_key, json.dumps(payload, default=str)),
            )
        return True

    def record_outcome(self, key: str, outcome: str, detail: str = "", now: float | None = None) -> None:
        """Append an outcome ('recovered', 'failed_again', 'executed', ...) for a recommendation."""
        now = time.time() if now is None else now
        self.db.execute(
            "INSERT INTO audit(ts, kind, job_id, idempotency_key, payload) VALUES (?,?,?,?,?)",
            (now, "outcome", None, key, json.dumps({"outcome": outcome, "detail": detail})),
        )
