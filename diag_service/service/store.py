"""Durable store of the service's work and results, through SQLAlchemy Core.

SQLite (WAL, ``synchronous=FULL``) by default; PostgreSQL by URL (``postgresql+psycopg://...``) when
several replicas share one store. Guarantees:

- **Nothing is deleted**: no ``DELETE`` statement exists here. A finished job's result is written
  once, in the same transaction that marks it ``done``, and never overwritten (every later update
  is conditional on the job not being finished).
- **A restart loses nothing**: jobs are rows before they are queued; :meth:`Store.unfinished` lists
  what a replica had queued or running, for the queue to resume or end with a stated reason.
- **Replicas share the work through leases**: a job belongs to its ``owner`` until ``lease_until``
  (epoch seconds); the owner renews the leases of the jobs it holds (:meth:`Store.renew`). A job whose
  lease has lapsed (its replica died) is taken over by any replica (:meth:`Store.claim_next`: one row
  under ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL, a conditional ``UPDATE`` on SQLite,
  whose writers are serialised anyway). Every change of a held job is conditional on the owner
  (:meth:`Store.finish` / :meth:`Store.fail` with ``owner``), so a replica that lost its lease cannot
  overwrite the result of the one that took over. A job without a lease (``lease_until`` NULL: made
  without ``lease_s``) is left to its owner's restart, as before leases. Leases compare wall clocks of
  the replicas: they must agree to well within a lease.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    event,
    func,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from diag_service.errors import DiagError, ErrorKind

JobKind = Literal["diagnose", "hang", "slow", "etpr"]
JobStatus = Literal["queued", "running", "done", "failed"]
UNFINISHED = ("queued", "running")

metadata = MetaData()

jobs = Table(
    "jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("job_id", String(256), index=True),
    Column("owner", String(256), nullable=False),
    Column("created_at", Float, nullable=False, index=True),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("attempts", Integer, nullable=False, default=0),
    Column("request", Text, nullable=False),
    Column("input_path", Text),
    Column("input_bytes", BigInteger, nullable=False, default=0),
    Column("result", Text),
    Column("error", Text),
    Column("error_status", Integer),
    Column("category", String(32)),
    Column("failure_mode", String(32)),
    Column("summary", Text),
    Column("lease_until", Float),
)

feedback = Table(
    "feedback", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("diagnosis_id", String(32), nullable=False, index=True),
    Column("created_at", Float, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("category", String(32), nullable=False),
    Column("root_cause", Text),
    Column("action", Text),
    Column("level", String(4)),
    Column("who", String(256)),
    Column("source", String(16), nullable=False),
    Column("kb_record_id", String(128)),
    Column("kb_error", Text),
)

alerts = Table(
    "alerts", metadata,
    Column("key", String(512), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("job_id", String(256)),
    Column("first_at", Float, nullable=False),
    Column("last_sent_at", Float, nullable=False),
    Column("last_seen_at", Float, nullable=False),
    Column("count", Integer, nullable=False),
    Column("message", Text, nullable=False),
)


class StoreError(DiagError):
    """The database cannot be reached or written."""

    kind = ErrorKind.UNAVAILABLE


class JobRecord(BaseModel):
    """One unit of work and, once done, its result (JSON text of the analyzer's pydantic model)."""

    id: str
    kind: JobKind
    status: JobStatus
    job_id: str | None = None
    owner: str
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    request: dict[str, Any] = Field(default_factory=dict)
    input_path: str | None = None
    input_bytes: int = 0
    result: str | None = None
    error: str | None = None
    error_status: int | None = None
    category: str | None = None
    failure_mode: str | None = None
    summary: str | None = None
    lease_until: float | None = None


class FeedbackRecord(BaseModel):
    id: int
    diagnosis_id: str
    created_at: float
    verdict: str
    category: str
    root_cause: str | None = None
    action: str | None = None
    level: str | None = None
    who: str | None = None
    source: str
    kb_record_id: str | None = None
    kb_error: str | None = None


def new_id() -> str:
    """A 32-hex-digit id, time-ordered in its first 12 digits (milliseconds) so ids sort by creation."""
    return f"{int(time.time() * 1000):012x}{uuid.uuid4().hex[:20]}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


class Store:
    """The service's database. Thread-safe; several processes (SQLite) or replicas (PostgreSQL) may share it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"future": True}
        if self.is_sqlite:
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True
        try:
            self.engine: Engine = create_engine(url, **kwargs)
            if self.is_sqlite:
                event.listen(self.engine, "connect", _sqlite_pragmas)
            metadata.create_all(self.engine)
            self._add_missing_columns()
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open the store at {self.safe_url}: {exc}") from exc

    def _add_missing_columns(self) -> None:
        """Columns added to ``jobs`` since a database was made (``create_all`` makes missing tables only)."""
        have = {c["name"] for c in inspect(self.engine).get_columns("jobs")}
        if "lease_until" not in have:
            kind = "DOUBLE PRECISION" if self.engine.dialect.name == "postgresql" else "FLOAT"
            with self.engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE jobs ADD COLUMN lease_until {kind}"))

    @property
    def safe_url(self) -> str:
        """The URL without its password, for messages."""
        from sqlalchemy.engine import make_url

        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except Exception:  # noqa: BLE001 - an unparsable URL is shown as a kind only
            return self.url.split(":", 1)[0] + ":…"

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except IntegrityError:
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"store error: {exc.__class__.__name__}: {exc}") from exc

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            with self.engine.connect() as conn:
                conn.execute(select(1))
            return True
        except SQLAlchemyError:
            return False

    # -- jobs ------------------------------------------------------------------------------------------

    def create_job(self, kind: JobKind, request: dict[str, Any], owner: str, *, job_id: str | None = None,
                   input_path: str | None = None, input_bytes: int = 0, job_uuid: str | None = None,
                   lease_s: float | None = None) -> JobRecord:
        """Insert a ``queued`` job and return it; with ``lease_s`` (seconds) ``owner`` holds it that long
        (renewed by :meth:`renew`), without it the job is never taken over by another replica."""
        now = time.time()
        row = {"id": job_uuid or new_id(), "kind": kind, "status": "queued", "job_id": job_id, "owner": owner,
               "created_at": now, "attempts": 0, "request": json.dumps(request), "input_path": input_path,
               "input_bytes": input_bytes, "lease_until": now + lease_s if lease_s is not None else None}
        with self._tx() as conn:
            conn.execute(insert(jobs).values(**row))
        return JobRecord(**{**row, "request": request})

    def mark_running(self, id_: str) -> JobRecord | None:
        """Count one more attempt and mark the job ``running``; None if it is already finished."""
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(and_(jobs.c.id == id_, jobs.c.status.in_(UNFINISHED)))
                               .values(status="running", started_at=time.time(), attempts=jobs.c.attempts + 1))
            if res.rowcount == 0:
                return None
        return self.get(id_)

    def requeue(self, id_: str, owner: str, *, lease_s: float | None = None) -> bool:
        """Put an unfinished job of ``owner`` back to ``queued`` (restart recovery), holding it ``lease_s``
        more seconds when given. False if it is finished or another replica has taken it over."""
        values: dict[str, Any] = {"status": "queued"}
        if lease_s is not None:
            values["lease_until"] = time.time() + lease_s
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(and_(jobs.c.id == id_, jobs.c.status.in_(UNFINISHED),
                                                       jobs.c.owner == owner)).values(**values))
            return res.rowcount == 1

    def claim(self, id_: str, owner: str, lease_s: float) -> JobRecord | None:
        """Start a run of a job ``owner`` has queued (or one whose lease has lapsed): mark it ``running``,
        count the attempt, hold it ``lease_s`` seconds. None when it is finished, running, or held by
        another replica. One conditional ``UPDATE``: of two claimants, one wins."""
        now = time.time()
        cond = or_(and_(jobs.c.status == "queued", jobs.c.owner == owner), _lapsed(now))
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(and_(jobs.c.id == id_, cond)).values(
                status="running", owner=owner, started_at=now, attempts=jobs.c.attempts + 1, lease_until=now + lease_s))
            if res.rowcount == 0:
                return None
        return self.get(id_)

    def claim_next(self, owner: str, lease_s: float) -> JobRecord | None:
        """Take over the oldest job of another replica whose lease has lapsed, marked ``running`` under
        ``owner`` for ``lease_s`` seconds; None when there is none. PostgreSQL: the candidate row is
        locked with ``FOR UPDATE SKIP LOCKED``, so replicas claiming at once each get a different job."""
        now = time.time()
        cond = and_(_lapsed(now), jobs.c.owner != owner)
        q = select(jobs.c.id).where(cond).order_by(jobs.c.created_at).limit(1)
        if not self.is_sqlite:
            q = q.with_for_update(skip_locked=True)
        with self._tx() as conn:
            id_ = conn.execute(q).scalar_one_or_none()
            if id_ is None:
                return None
            res = conn.execute(update(jobs).where(and_(jobs.c.id == id_, cond)).values(
                status="running", owner=owner, started_at=now, attempts=jobs.c.attempts + 1, lease_until=now + lease_s))
            if res.rowcount == 0:  # SQLite: another process claimed it between the two statements
                return None
        return self.get(id_)

    def renew(self, owner: str, ids: list[str], lease_s: float) -> int:
        """Extend to now + ``lease_s`` the leases of the unfinished jobs among ``ids`` that ``owner`` still
        holds. Returns how many were renewed (fewer than ``ids``: finished, or taken over)."""
        if not ids:
            return 0
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(and_(jobs.c.id.in_(ids), jobs.c.owner == owner,
                                                       jobs.c.status.in_(UNFINISHED)))
                               .values(lease_until=time.time() + lease_s))
            return int(res.rowcount)

    def finish(self, id_: str, result: str, *, category: str | None = None, failure_mode: str | None = None,
               summary: str | None = None, owner: str | None = None) -> bool:
        """Store the result and mark the job ``done``, once. False if it was already finished (or, with
        ``owner``, if another replica holds it now)."""
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(_held(id_, owner)).values(
                status="done", finished_at=time.time(), result=result, category=category, failure_mode=failure_mode,
                summary=(summary or "")[:2000] or None, error=None, error_status=None))
            return res.rowcount == 1

    def fail(self, id_: str, error: str, status_code: int = 500, *, owner: str | None = None) -> bool:
        """Mark an unfinished job ``failed`` with a reason. False if it was already finished (or, with
        ``owner``, if another replica holds it now)."""
        with self._tx() as conn:
            res = conn.execute(update(jobs).where(_held(id_, owner)).values(
                status="failed", finished_at=time.time(), error=error[:4000], error_status=status_code))
            return res.rowcount == 1

    def get(self, id_: str) -> JobRecord | None:
        with self._tx() as conn:
            row = conn.execute(select(jobs).where(jobs.c.id == id_)).mappings().first()
        return _job(row) if row else None

    def latest_for_job(self, job_id: str, kind: JobKind = "diagnose") -> JobRecord | None:
        """The most recent job of ``kind`` for a user job id (finished ones first)."""
        with self._tx() as conn:
            row = conn.execute(select(jobs).where(and_(jobs.c.job_id == job_id, jobs.c.kind == kind))
                               .order_by((jobs.c.status == "done").desc(), jobs.c.created_at.desc()).limit(1)).mappings().first()
        return _job(row) if row else None

    def recent(self, kind: JobKind | None = "diagnose", limit: int = 50, offset: int = 0,
               category: str | None = None, status: str | None = None) -> list[JobRecord]:
        """Newest first, without the result text (lists stay small)."""
        cols = [c for c in jobs.c if c.name != "result"]
        q = select(*cols).order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(limit).offset(offset)
        if kind is not None:
            q = q.where(jobs.c.kind == kind)
        if category is not None:
            q = q.where(jobs.c.category == category)
        if status is not None:
            q = q.where(jobs.c.status == status)
        with self._tx() as conn:
            return [_job(r) for r in conn.execute(q).mappings()]

    def count(self, kind: JobKind | None = None, status: str | None = None) -> int:
        q = select(func.count()).select_from(jobs)
        if kind is not None:
            q = q.where(jobs.c.kind == kind)
        if status is not None:
            q = q.where(jobs.c.status == status)
        with self._tx() as conn:
            return int(conn.execute(q).scalar_one())

    def unfinished(self, owner: str) -> list[JobRecord]:
        """Jobs of ``owner`` still ``queued`` or ``running``, oldest first."""
        with self._tx() as conn:
            rows = conn.execute(select(jobs).where(and_(jobs.c.owner == owner, jobs.c.status.in_(UNFINISHED)))
                                .order_by(jobs.c.created_at)).mappings().all()
        return [_job(r) for r in rows]

    # -- feedback --------------------------------------------------------------------------------------

    def add_feedback(self, diagnosis_id: str, verdict: str, category: str, *, root_cause: str | None = None,
                     action: str | None = None, level: str | None = None, who: str | None = None, source: str = "api",
                     kb_record_id: str | None = None, kb_error: str | None = None) -> FeedbackRecord:
        """Append an operator's verdict (rows are never updated or deleted)."""
        row = {"diagnosis_id": diagnosis_id, "created_at": time.time(), "verdict": verdict, "category": category,
               "root_cause": root_cause, "action": action, "level": level, "who": who, "source": source,
               "kb_record_id": kb_record_id, "kb_error": kb_error}
        with self._tx() as conn:
            res = conn.execute(insert(feedback).values(**row))
            fid = int(res.inserted_primary_key[0])
        return FeedbackRecord(id=fid, **row)

    def feedback_for(self, diagnosis_id: str) -> list[FeedbackRecord]:
        with self._tx() as conn:
            rows = conn.execute(select(feedback).where(feedback.c.diagnosis_id == diagnosis_id)
                                .order_by(feedback.c.id)).mappings().all()
        return [FeedbackRecord(**dict(r)) for r in rows]

    # -- alerts ----------------------------------------------------------------------------------------

    def claim_alert(self, key: str, kind: str, job_id: str | None, message: dict[str, Any], repeat_s: float) -> bool:
        """True when an alert with this de-duplication ``key`` should be sent now.

        The first alert of a key is sent; later ones only once ``repeat_s`` has passed since the last
        one sent (a still-ongoing incident is re-announced at most that often). Atomic across
        threads, processes and replicas (the key is the primary key).
        """
        now = time.time()
        text = json.dumps(message)[:20000]
        try:
            with self._tx() as conn:
                conn.execute(insert(alerts).values(key=key, kind=kind, job_id=job_id, first_at=now, last_sent_at=now,
                                                   last_seen_at=now, count=1, message=text))
            return True
        except IntegrityError:
            pass
        with self._tx() as conn:
            res = conn.execute(update(alerts).where(and_(alerts.c.key == key, alerts.c.last_sent_at <= now - repeat_s))
                               .values(last_sent_at=now, last_seen_at=now, count=alerts.c.count + 1, message=text))
            if res.rowcount == 1:
                return True
            conn.execute(update(alerts).where(alerts.c.key == key).values(last_seen_at=now, count=alerts.c.count + 1))
        return False

    def release_alert(self, key: str) -> None:
        """Forget that the alert ``key`` was sent (no receiver accepted it), so the next one is sent."""
        with self._tx() as conn:
            conn.execute(update(alerts).where(alerts.c.key == key).values(last_sent_at=0.0))

    def alert_count(self, key: str) -> int:
        """How many times an alert with this key was raised (sent or suppressed); 0 if never."""
        with self._tx() as conn:
            v = conn.execute(select(alerts.c.count).where(alerts.c.key == key)).scalar_one_or_none()
        return int(v or 0)


def _lapsed(now: float) -> Any:
    """An unfinished job whose lease ran out (a job without a lease never lapses)."""
    return and_(jobs.c.status.in_(UNFINISHED), jobs.c.lease_until.is_not(None), jobs.c.lease_until < now)


def _held(id_: str, owner: str | None) -> Any:
    cond = and_(jobs.c.id == id_, jobs.c.status.in_(UNFINISHED))
    return cond if owner is None else and_(cond, jobs.c.owner == owner)


def _job(row: Any) -> JobRecord:
    d = dict(row)
    try:
        d["request"] = json.loads(d.get("request") or "{}")
    except json.JSONDecodeError:
        d["request"] = {}
    return JobRecord(**d)
