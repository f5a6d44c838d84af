"""The service's state, shared by the HTTP routes, the pages and the bot: store, queue, auth, metrics,
knowledge base, alerts and live slow-step streams. No analysis happens here; it calls the core."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diag_service.bot.alerts import Alert, Notifier
from diag_service.domain import Category, Diagnosis, HangReport, RecoveryLevel
from diag_service.errors import DiagError, ErrorKind
from diag_service.recovery import History, load_policy
from diag_service.recovery.auto import IncidentRecovery
from diag_service.recovery.history import NodeOffender
from diag_service.recovery.recommend import Executor, executor_from_env
from diag_service.redact import redact
from diag_service.service.auth import Auth
from diag_service.service.metrics import Metrics
from diag_service.service.queue import JobQueue, QueueFull
from diag_service.service.settings import Settings
from diag_service.service.store import FeedbackRecord, JobKind, JobRecord, Store, new_id
from diag_service.service.uploads import Refused
from diag_service.slow import SlowAlarm, SlowDetector, SlowReport

log = logging.getLogger("diag_service.service")


class NotFound(DiagError):
    """No such diagnosis or job."""

    kind = ErrorKind.INPUT
    http_status = 404


class Conflict(DiagError):
    """The resource is not in a state that allows the operation (e.g. feedback on an unfinished diagnosis)."""

    kind = ErrorKind.INPUT
    http_status = 409


@dataclass
class FeedbackOutcome:
    """What feedback did: the stored row, and the knowledge-base record it created or merged into."""

    feedback: FeedbackRecord
    kb_record_id: str | None
    kb_merged: bool | None
    kb_error: str | None


class SlowStreams:
    """Live :class:`~diag_service.slow.SlowDetector` per job, least recently used evicted beyond ``max_streams``."""

    def __init__(self, max_streams: int) -> None:
        self.max_streams = max_streams
        self._streams: OrderedDict[str, tuple[SlowDetector, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, job_id: str, world_size: int | None, create: bool) -> tuple[SlowDetector, threading.Lock] | None:
        with self._lock:
            entry = self._streams.get(job_id)
            if entry is None:
                if not create:
                    return None
                entry = (SlowDetector(world_size=world_size, source=f"stream:{job_id}"), threading.Lock())
                self._streams[job_id] = entry
                while len(self._streams) > self.max_streams:
                    self._streams.popitem(last=False)
            self._streams.move_to_end(job_id)
            return entry

    def update(self, job_id: str, records: Iterable[Mapping[str, Any]], world_size: int | None) -> list[SlowAlarm]:
        """Feed step records to the job's detector; the alarms raised by the steps they completed."""
        det, lock = self._get(job_id, world_size, create=True)  # type: ignore[misc]
        with lock:
            return det.update(records)

    def report(self, job_id: str) -> SlowReport | None:
        entry = self._get(job_id, None, create=False)
        if entry is None:
            return None
        det, lock = entry
        with lock:
            return det.report()


class ServiceContext:
    """Everything the routes and the bot share. Create with settings; :meth:`start` / :meth:`stop` around use."""

    def __init__(self, settings: Settings, executor: Executor | None = None) -> None:
        """``executor``: what may execute a live incident's recovery plan (default: the one ``DIAG_EXECUTOR``
        configures, :func:`~diag_service.recovery.recommend.executor_from_env`; none when it is unset). Plans are
        executed only when the recovery policy's ``execution`` section allows it too (:attr:`recovery`)."""
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        settings.uploads_dir.mkdir(parents=True, exist_ok=True)
        self.store = Store(settings.db_url)
        self.metrics = Metrics()
        self.auth = Auth(settings)
        self.queue = JobQueue(settings, self.store, on_done=self._on_done)
        self.queue.kb_cfg = self.kb_cfg
        self.metrics.bind_queue(lambda: self.queue.queued, lambda: self.queue.running)
        self.streams = SlowStreams(settings.slow_streams_max)
        self.notifier = Notifier([(w.url, w.format) for w in settings.webhooks], claim=self._claim_alert,
                                 release=self.store.release_alert,
                                 on_outcome=lambda kind, outcome: self.metrics.alerts.labels(kind, outcome).inc())
        self._kb: Any = None
        self._kb_lock = threading.Lock()
        self._uploads = threading.BoundedSemaphore(settings.max_concurrent_uploads)
        self.started_at = time.time()
        self.recovery_notes: list[str] = []
        if executor is None:
            executor = executor_from_env()
        #: executes the plan of each live incident's final diagnosis (None: plans stay recommendations)
        self.recovery: IncidentRecovery | None = None
        #: the recovery policy (a broken policy file stops the start, not each diagnosis)
        self.policy = load_policy(settings.recovery_policy)
        if executor is not None and settings.recovery:
            self.recovery = IncidentRecovery(executor, self.policy, self.history_path)

    @property
    def history_path(self) -> Path:
        """The recovery history (SQLite) of this service: ``<data_dir>/recovery_history.sqlite``."""
        return self.settings.data_dir / "recovery_history.sqlite"

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        if self.kb_cfg is not None:  # load the model for search and feedback now, not on the first click
            threading.Thread(target=self._warm_kb, name="diag-kb-warm", daemon=True).start()
        self.recovery_notes = self.queue.start()
        for note in self.recovery_notes:
            log.warning("restart recovery: %s", note)

    def _warm_kb(self) -> None:
        try:
            self.kb()
        except Exception as exc:  # noqa: BLE001 - reported again, with its reason, on first use
            log.warning("knowledge base not loaded at start: %s", exc)

    def stop(self) -> None:
        if self.recovery is not None:
            self.recovery.close()
        self.queue.stop()
        self.notifier.close()
        self.store.close()

    # -- configuration for tasks ---------------------------------------------------------------------

    @property
    def kb_cfg(self) -> dict[str, Any] | None:
        s = self.settings
        if not s.kb_enabled:
            return None
        return {"home": str(s.kb_home) if s.kb_home else None, "embedder": s.kb_embedder}

    def _ingest_limits(self) -> dict[str, Any]:
        """The service's upload limits as the ingest of its tasks takes them (one set for both)."""
        lim = self.settings.limits.ingest_limits()
        return {k: getattr(lim, k) for k in ("max_total_bytes", "max_ratio", "ratio_floor_bytes", "max_members", "max_nesting")}

    def diagnose_task(self, path: Path, job_id: str | None, exclude: list[str] | None = None) -> dict[str, Any]:
        """The stored task of a diagnosis (see :mod:`diag_service.service.tasks`)."""
        s = self.settings
        return {
            "kind": "diagnose", "path": str(path), "job_id": job_id, "exclude": exclude or [],
            "ingest": self._ingest_limits(),
            "recovery": s.recovery, "platform": s.platform,
            "history_path": str(self.history_path) if s.recovery and s.recovery_history else None,
            "policy_path": str(s.recovery_policy) if s.recovery_policy else None,
            "kb": self.kb_cfg,
            "llm": s.llm,
        }

    # -- work ----------------------------------------------------------------------------------------

    def has_room(self) -> bool:
        return self.queue.queued + self.queue.running < self.settings.queue_max

    def acquire_upload_slot(self) -> None:
        """Take one of ``max_concurrent_uploads`` slots, or refuse with 503."""
        if not self._uploads.acquire(blocking=False):
            raise Refused(503, f"too many uploads in progress (max_concurrent_uploads={self.settings.max_concurrent_uploads})"
                               "; retry shortly", "uploads_busy")

    def release_upload_slot(self) -> None:
        self._uploads.release()

    def submit(self, kind: JobKind, task: dict[str, Any], *, job_id: str | None, job_uuid: str | None = None,
               input_path: Path | None = None, input_bytes: int = 0,
               caller: str | None = None) -> tuple[JobRecord, concurrent.futures.Future[JobRecord]]:
        """Store a job and queue it. ``caller`` (a token's name, ``slack:<user id>``) is kept with the job
        and scopes the alerts it raises. Raises :class:`Refused` (503) when the queue is full."""
        if caller is not None:
            task = {**task, "caller": caller}
        if not self.has_room():
            self.metrics.refusals.labels("queue_full").inc()
            raise Refused(503, f"the work queue is full ({self.settings.queue_max} jobs); retry later", "queue_full")
        if input_path is not None:
            task = {**task, "upload_dir": str(input_path)}  # kept out of error messages (run_task)
        job = self.store.create_job(kind, task, self.settings.replica_id, job_id=job_id, job_uuid=job_uuid or new_id(),
                                    input_path=str(input_path) if input_path else None, input_bytes=input_bytes,
                                    lease_s=self.settings.lease_s)
        try:
            fut = self.queue.submit(job)
        except QueueFull as exc:
            self.store.fail(job.id, f"refused: {exc}", 503)
            self.metrics.refusals.labels("queue_full").inc()
            raise Refused(503, str(exc), "queue_full") from None
        return job, fut

    @staticmethod
    async def wait(fut: concurrent.futures.Future[JobRecord], timeout_s: float) -> JobRecord | None:
        """The finished job, or None if it is still running after ``timeout_s``."""
        if timeout_s <= 0:
            return fut.result() if fut.done() else None
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), timeout_s)
        except TimeoutError:
            return None

    def wait_blocking(self, job: JobRecord, timeout_s: float) -> JobRecord:
        """Block (in a worker thread, e.g. the bot's) until ``job`` finishes or ``timeout_s`` passes."""
        fut = self.queue.future(job.id)
        if fut is not None:
            try:
                return fut.result(timeout_s)
            except concurrent.futures.TimeoutError:
                pass
        return self.store.get(job.id) or job

    def job(self, id_: str, kind: JobKind | None = None) -> JobRecord:
        job = self.store.get(id_) if id_ and len(id_) <= 64 else None
        if job is None or (kind is not None and job.kind != kind):
            raise NotFound(f"no {kind or 'job'} with id {id_!r}")
        return self.queue.current(job)  # failed, even while a full disk keeps the store from saying so

    def diagnosis(self, id_: str) -> tuple[JobRecord, Diagnosis | None]:
        """A diagnosis job and, when done, its :class:`Diagnosis`. Raises :class:`NotFound`."""
        job = self.job(id_, "diagnose")
        return job, (Diagnosis.model_validate_json(job.result) if job.status == "done" and job.result else None)

    # -- knowledge base --------------------------------------------------------------------------------

    def kb(self) -> Any:
        """This process's knowledge base (opened on first use). Raises :class:`Refused` (503) when disabled."""
        cfg = self.kb_cfg
        if cfg is None:
            raise Refused(503, "the knowledge base is disabled on this service (kb_enabled: false)", "kb_disabled")
        with self._kb_lock:
            if self._kb is None:
                from diag_service.service.tasks import knowledge_base

                self._kb = knowledge_base(cfg)
            return self._kb

    def feedback(self, id_: str, *, verdict: str, category: Category | None = None, root_cause: str | None = None,
                 action: str | None = None, level: RecoveryLevel | None = None, who: str | None = None,
                 source: str = "api") -> FeedbackOutcome:
        """Record a confirmation or correction of a finished diagnosis, and teach the knowledge base.

        The feedback row is stored even when the knowledge base refuses or is unavailable (its reason
        is kept in ``kb_error``). The free text (``root_cause``, ``action``, ``who``) is redacted before it is
        stored or taught. Raises :class:`NotFound`, :class:`Conflict` (not finished).
        """
        root_cause, action, who = (redact(x) if x else x for x in (root_cause, action, who))
        job, d = self.diagnosis(id_)
        if d is None:
            raise Conflict(f"diagnosis {id_} is {job.status}; feedback needs a finished diagnosis")
        cat = d.category if verdict == "confirm" or category is None else category
        record_id: str | None = None
        merged: bool | None = None
        kb_error: str | None = None
        if self.kb_cfg is not None:
            from diag_service.kb import KBError

            try:
                res = self.kb().add_feedback(d, category=cat, root_cause=root_cause, action=action, level=level)
                record_id, merged = res.record_id, res.merged
            except (KBError, ValueError, OSError) as exc:
                kb_error = str(exc)[:1000]
        else:
            kb_error = "knowledge base disabled"
        row = self.store.add_feedback(id_, "confirmed" if cat == d.category else "corrected", cat.value,
                                      root_cause=root_cause, action=action, level=level.value if level else None, who=who,
                                      source=source, kb_record_id=record_id, kb_error=kb_error)
        self.metrics.feedback.labels(row.verdict, source).inc()
        return FeedbackOutcome(row, record_id, merged, kb_error)

    # -- alerts ----------------------------------------------------------------------------------------

    def link(self, id_: str) -> str | None:
        """The page of a diagnosis, when ``public_url`` is configured."""
        return f"{self.settings.public_url.rstrip('/')}/ui/diagnoses/{id_}" if self.settings.public_url else None

    def _claim_alert(self, key: str, kind: str, job_id: str | None, message: dict[str, Any]) -> bool:
        return self.store.claim_alert(key, kind, job_id, message, self.settings.alert_repeat_s)

    def alert_stream_alarms(self, job_id: str, alarms: list[SlowAlarm], caller: str | None = None) -> None:
        """Announce a live stream's slowdown (one message per incident and ``caller``)."""
        if not alarms:
            return
        first = alarms[0]
        fields = {"Step": str(first.step), "Scope": f"{first.scope} {first.subject}"}
        if first.kind is not None:
            fields["Phase"] = str(first.kind.value if hasattr(first.kind, "value") else first.kind)
        self.notifier.notify(Alert(kind="slow", job_id=job_id, title=f"Job {job_id} is running slow",
                                   text="; ".join(a.message for a in alarms[:3])[:1500], fields=fields, caller=caller))

    def alert_live_diagnosis(self, job_id: str, diagnosis_id: str, incident: int) -> None:
        """Announce the final diagnosis ``diagnosis_id`` of incident number ``incident`` of live job ``job_id``
        (whatever its failure mode), once per incident: the alert's key is ``incident:<job>#<n>``, claimed in
        the store (so a second final diagnosis of the same incident, a replica or a replay after a restart
        sends nothing) and given back when no receiver took it. Nothing when the diagnosis is not done.

        When the diagnosis is final (not a provisional one of a job still running), its restart and faulty nodes
        are recorded in the recovery history once per incident (:meth:`History.record_incident
        <diag_service.recovery.history.History.record_incident>`, when ``recovery_history`` is on): the
        service's view across jobs (repeat-offender nodes) sees them. When an executor is configured too, its
        recovery plan is handed to :attr:`recovery` as incident ``live:<job>#<n>``: executed once per incident
        when the policy allows it, with the audit trail (:mod:`diag_service.recovery.auto`)."""
        try:
            job, d = self.diagnosis(diagnosis_id)
        except NotFound:
            return
        if d is None:
            return
        self.notifier.notify(Alert.from_diagnosis(d, diagnosis_id, job_id=job_id, link=self.link(diagnosis_id),
                                                  incident=str(incident)))
        live = job.request.get("live") or {}
        if live.get("provisional") is not False:
            return
        if d.recovery is not None and job.request.get("history_path"):
            self._record_incident(d, f"live:{job_id}#{incident}")
        if self.recovery is not None:
            self.recovery.submit(d, f"live:{job_id}#{incident}", diagnosis_id)

    def _record_incident(self, d: Diagnosis, incident: str) -> None:
        """Record the final diagnosis ``d`` of ``incident`` in the recovery history (idempotent per incident)."""
        assert d.recovery is not None
        hit = d.primary_hit()
        try:
            history = History(self.history_path)
            try:
                history.record_incident(d, d.recovery, incident, hit.signature_id if hit else None)
            finally:
                history.close()
        except (OSError, sqlite3.Error) as exc:  # a full disk or a locked file: the diagnosis stands, said in the log
            log.error("incident %s not recorded in the recovery history: %s", incident, exc)

    def offenders(self) -> list[NodeOffender]:
        """The repeat-offender nodes of the recovery history: named in the failures of the policy's
        ``history.lemon_node_faults`` distinct jobs or more within its ``window_days`` (none without a history)."""
        if not self.history_path.is_file():
            return []
        h = self.policy.history
        history = History(self.history_path)
        try:
            return history.offenders(h.lemon_node_faults, h.window_days * 86400)
        finally:
            history.close()

    def _on_done(self, job: JobRecord, outcome: dict[str, Any]) -> None:
        m = self.metrics
        m.jobs.labels(job.kind, job.status).inc()
        m.job_seconds.labels(job.kind).observe(float(outcome.get("seconds", 0.0)))
        if job.status != "done":
            return
        name = job.job_id or job.id
        caller = job.request.get("caller")  # alerts are scoped to who submitted the work
        if job.kind == "diagnose":
            m.diagnoses.labels(job.category or "unknown", job.failure_mode or "unknown").inc()
            for stage, ms in (outcome.get("timings_ms") or {}).items():
                if stage != "total":
                    m.stage_seconds.labels(stage).observe(float(ms) / 1000.0)
            if job.failure_mode in ("fail_hang", "fail_slow") and not job.request.get("live"):
                # a live job's diagnoses are announced once per incident, when final (alert_live_diagnosis)
                kind = "hang" if job.failure_mode == "fail_hang" else "slow"
                self.notifier.notify(Alert(kind=kind, job_id=name, title=f"Job {name}: {job.failure_mode} ({job.category})",
                                           text=(job.summary or "")[:1500], link=self.link(job.id), caller=caller))
        elif job.kind == "hang" and outcome.get("hung") and job.result:
            rep = HangReport.model_validate_json(job.result)
            fields = {"Stuck ranks": f"{len(rep.stuck_ranks)} of {rep.ranks}"}
            if rep.suspects:
                fields["Suspects"] = "; ".join(f"rank {s.rank}{' @ ' + s.node if s.node else ''}: {s.reason}"
                                               for s in rep.suspects[:3])[:900]
            if rep.suspect_nodes:
                fields["Suspect nodes"] = ", ".join(rep.suspect_nodes[:10])
            self.notifier.notify(Alert(kind="hang", job_id=name, title=f"Job {name} is hung", text=rep.explanation[:1500],
                                       fields=fields, caller=caller))
        elif job.kind == "slow" and job.failure_mode == "fail_slow":
            self.notifier.notify(Alert(kind="slow", job_id=name, title=f"Job {name} is running slow",
                                       text=(job.summary or "")[:1500], fields={"Category": job.category or "unknown"},
                                       caller=caller))
