"""Recovery history in SQLite: restarts per job, faults per node across jobs, append-only audit log.

Node faults are what the service's view across jobs reads: a node named in the failures of several distinct
jobs within the policy's window is a repeat offender (:meth:`History.offenders`). A live job's diagnoses do not
add their own rows; the final diagnosis of each of its incidents does, once (:meth:`History.record_incident`).

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

from pydantic import BaseModel, Field

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


class NodeOffender(BaseModel):
    """A node named in the failures of several jobs (:meth:`History.offenders`). Times: unix seconds."""

    node: str
    jobs: int = Field(description="Distinct jobs whose failures named the node within the window.")
    faults: int = Field(description="Faults recorded on the node within the window (a job may have several).")
    last_time: float = Field(description="The latest of those faults.")
    job_ids: list[str] = Field(default_factory=list, description="Those jobs, the most recent first (at most 10).")


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

    def node_jobs(self, node: str, window_s: float, now: float | None = None, exclude_job: str | None = None) -> list[str]:
        """The distinct jobs (ids) with a fault recorded on ``node`` within the last ``window_s`` seconds, the most
        recent first, without ``exclude_job``."""
        now = time.time() if now is None else now
        rows = self.db.execute(
            "SELECT job_id, MAX(ts) t FROM node_faults WHERE node=? AND ts>=? AND COALESCE(job_id, '')<>'' "
            "AND job_id IS NOT ? GROUP BY job_id ORDER BY t DESC, job_id", (node, now - window_s, exclude_job),
        ).fetchall()
        return [r[0] for r in rows]

    def offenders(self, threshold: int, window_s: float, now: float | None = None, limit: int = 100) -> list[NodeOffender]:
        """Nodes named in the failures of at least ``threshold`` distinct jobs within the last ``window_s``
        seconds (the policy's ``history.lemon_node_faults`` and ``window_days``), most jobs first, at most
        ``limit``."""
        now = time.time() if now is None else now
        rows = self.db.execute(
            "SELECT node, COUNT(DISTINCT NULLIF(job_id, '')) j, COUNT(*) c, MAX(ts) FROM node_faults WHERE ts>=? "
            "GROUP BY node HAVING j>=? ORDER BY j DESC, c DESC, node LIMIT ?", (now - window_s, threshold, limit),
        ).fetchall()
        return [NodeOffender(node=r[0], jobs=int(r[1]), faults=int(r[2]), last_time=float(r[3]),
                             job_ids=self.node_jobs(r[0], window_s, now)[:10]) for r in rows]

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
        self, d: Diagnosis, plan: RecoveryPlan, signature_id: str | None, now: float | None = None, counts: bool = True,
    ) -> bool:
        """Record a recommendation once. Returns False when this key was already recorded. ``counts``: also record
        the restart (a plan at L1-L3) and the faulty nodes' faults; False for the diagnoses of a live job, whose
        incidents are recorded once each by :meth:`record_incident`."""
        now = time.time() if now is None else now
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if self.db.execute(
                "SELECT 1 FROM audit WHERE idempotency_key=? AND kind='recommendation'", (plan.idempotency_key,)
            ).fetchone():
                return False
            self.db.execute(
                "INSERT INTO audit(ts, kind, job_id, idempotency_key, payload) VALUES (?,?,?,?,?)",
                (now, "recommendation", d.job_id or "", plan.idempotency_key, plan.model_dump_json()),
            )
            if counts:
                self._count(d, plan, signature_id, plan.idempotency_key, now)
        return True

    def record_incident(self, d: Diagnosis, plan: RecoveryPlan, incident: str, signature_id: str | None,
                        now: float | None = None) -> bool:
        """Record the final diagnosis ``d`` of ``incident`` (a stable name of the fault, ``live:<job>#<n>``) with its
        plan: the restart (a plan at L1-L3) and a fault on each faulty node, keyed by the incident, so a second
        final diagnosis of it or an outcome replayed after a restart adds nothing. Returns whether anything was
        new."""
        now = time.time() if now is None else now
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            return self._count(d, plan, signature_id, incident, now) > 0

    def _count(self, d: Diagnosis, plan: RecoveryPlan, signature_id: str | None, key: str, now: float) -> int:
        """Insert the restart and node-fault rows of ``d`` under ``key`` (in the caller's transaction); rows added."""
        job = d.job_id or ""
        added = 0
        if plan.level in (RecoveryLevel.L1, RecoveryLevel.L2, RecoveryLevel.L3):
            added += self.db.execute(
                "INSERT OR IGNORE INTO restarts(job_id, ts, level, category, signature_id, nodes, idempotency_key) "
                "VALUES (?,?,?,?,?,?,?)",
                (job, now, plan.level.value, d.category.value, signature_id, json.dumps(d.faulty_nodes), key),
            ).rowcount
        if d.category in _NODE_FAULT_CATEGORIES:
            for node in d.faulty_nodes:
                added += self.db.execute(
                    "INSERT OR IGNORE INTO node_faults(node, ts, job_id, category, signature_id, idempotency_key) "
                    "VALUES (?,?,?,?,?,?)",
                    (node, now, job, d.category.value, signature_id, key),
                ).rowcount
        return added

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
