"""The bounded work queue: analyses run here, off the request path, in worker processes (or threads).

- **Bounded**: at most ``queue_max`` jobs queued or running; :meth:`JobQueue.submit` raises
  :class:`QueueFull` beyond it (the API answers 503 with ``Retry-After``).
- **Durable**: a job is a row in the :class:`~diag_service.service.store.Store` before it is queued,
  its result is written before it is reported, and :meth:`JobQueue.start` resumes what this replica
  had queued or running when it stopped (or ends it with a stated reason: input gone, too many attempts).
- **Isolated** (``worker_mode="process"``): each worker is a process that loads models once and is
  replaced when it dies or runs past ``job_timeout_s``; a crash fails one job, never the server.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import multiprocessing as mp
import queue
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from diag_service.errors import DiagError, ErrorKind
from diag_service.service.faults import disk_full_message, is_disk_full
from diag_service.service.settings import Settings
from diag_service.service.store import JobRecord, Store, StoreError
from diag_service.service.tasks import run_task, warm_up, worker_main

log = logging.getLogger("diag_service.service.queue")


class QueueFull(DiagError):
    """No room for more work right now."""

    kind = ErrorKind.UNAVAILABLE


class WorkerDied(DiagError):
    """The worker process ended while running a task."""

    kind = ErrorKind.INTERNAL


class WorkerTimeout(DiagError):
    """The task ran longer than the job timeout; its worker was stopped."""

    kind = ErrorKind.INTERNAL
    http_status = 504


class _ProcessWorker:
    """One worker process and its pipe. Started lazily, replaced after a crash or timeout."""

    def __init__(self, kb_cfg: dict[str, Any] | None, start_timeout_s: float = 300) -> None:
        self.kb_cfg = kb_cfg
        self.start_timeout_s = start_timeout_s
        self.proc: Any = None
        self.conn: Any = None
        self.ready = False

    def ensure(self) -> None:
        if self.proc is not None and self.proc.is_alive() and self.ready:
            return
        self.kill()
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child, self.kb_cfg), daemon=True, name="diag-worker")
        proc.start()
        child.close()
        self.proc, self.conn = proc, parent
        if not parent.poll(self.start_timeout_s):
            self.kill()
            raise WorkerDied(f"worker did not start within {self.start_timeout_s:.0f} s")
        try:
            msg = parent.recv()
        except (EOFError, OSError) as exc:
            code = proc.exitcode
            self.kill()
            raise WorkerDied(f"worker exited while starting (exit code {code})") from exc
        self.ready = msg[0] == "ready"

    def run(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.ensure()
        try:
            self.conn.send(task)
            if not self.conn.poll(timeout):
                self.kill()
                raise WorkerTimeout(f"the analysis ran longer than {timeout:.0f} s (job_timeout_s) and was stopped")
            return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = self.proc.exitcode if self.proc is not None else None
            if self.proc is not None:
                self.proc.join(1)
                code = self.proc.exitcode
            self.kill()
            raise WorkerDied(f"the worker process died while analysing (exit code {code})") from exc

    def kill(self) -> None:
        self.ready = False
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = self.conn = None

    def stop(self) -> None:
        if self.conn is not None and self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(2)
            except OSError:
                pass
        self.kill()


class JobQueue:
    """Bounded queue of stored jobs and the workers that run them.

    ``on_done(job, outcome)`` is called in a worker thread after each job is stored (metrics, alerts).
    """

    def __init__(self, settings: Settings, store: Store,
                 on_done: Callable[[JobRecord, dict[str, Any]], None] | None = None) -> None:
        self.settings = settings
        self.store = store
        self.on_done = on_done
        self._q: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._admitted = 0
        self._running = 0
        self._futures: dict[str, concurrent.futures.Future[JobRecord]] = {}
        self._threads: list[threading.Thread] = []
        self._workers: list[_ProcessWorker] = []
        self._stopping = threading.Event()
        self._warm = threading.Event()  # thread mode: this process has loaded the models
        self.kb_cfg: dict[str, Any] | None = None
        self._unrecorded: dict[str, tuple[str, int]] = {}  # job id -> (error, status) the store could not take yet

    # -- state -----------------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        with self._lock:
            return self._admitted - self._running

    @property
    def running(self) -> int:
        with self._lock:
            return self._running

    def ready(self) -> bool:
        """True when at least one worker can take work."""
        if self._stopping.is_set() or not self._threads:
            return False
        if self.settings.worker_mode == "thread":
            return self._warm.is_set()
        return any(w.ready for w in self._workers)

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> list[str]:
        """Start the workers and resume this replica's unfinished jobs. Returns what recovery did, in words."""
        notes = self._recover()
        if self.settings.worker_mode == "thread":
            threading.Thread(target=self._warm_up, name="diag-warm", daemon=True).start()
        for i in range(self.settings.workers):
            worker = _ProcessWorker(self.kb_cfg) if self.settings.worker_mode == "process" else None
            if worker is not None:
                self._workers.append(worker)
            t = threading.Thread(target=self._loop, args=(worker,), name=f"diag-dispatch-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return notes

    def _warm_up(self) -> None:
        try:
            warm_up(self.kb_cfg)
        except Exception:  # noqa: BLE001 - a failed warm-up shows up on the first real job
            log.exception("warm-up failed")
        self._warm.set()

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop taking jobs; wait up to ``grace_s`` for running ones, then stop the workers.

        Jobs still queued or running stay so in the store and are resumed by the next start.
        """
        self._stopping.set()
        self._record_failures()
        for _ in self._threads:
            self._q.put(None)
        deadline = time.monotonic() + grace_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        for w in self._workers:
            w.stop()
        self._threads.clear()
        self._workers.clear()

    def _recover(self) -> list[str]:
        notes: list[str] = []
        for job in self.store.unfinished(self.settings.replica_id):
            task = job.request
            if job.attempts >= self.settings.max_attempts:
                reason = (f"gave up after {job.attempts} attempt(s): the service stopped or its worker died "
                          "each time while this job ran")
                self.store.fail(job.id, reason, 500)
                notes.append(f"{job.id}: {reason}")
                continue
            missing = [p for p in (task.get("path"), task.get("dumps_dir")) if p and not Path(p).exists()]
            if missing:
                reason = f"input lost across a restart ({missing[0]} no longer exists); submit it again"
                self.store.fail(job.id, reason, 410)
                notes.append(f"{job.id}: {reason}")
                continue
            self.store.requeue(job.id, self.settings.replica_id)
            self._enqueue(job.id, task, admit=False)
            notes.append(f"{job.id}: resumed ({job.status} when the service stopped)")
        return notes

    # -- submission ------------------------------------------------------------------------------------

    def submit(self, job: JobRecord) -> concurrent.futures.Future[JobRecord]:
        """Queue a stored job (its ``request`` is the task). Raises :class:`QueueFull` when at capacity."""
        if self._stopping.is_set():
            raise QueueFull("the service is shutting down")
        self._record_failures()  # the store just took this job: it may take the failures it could not before
        return self._enqueue(job.id, job.request, admit=True)

    def _enqueue(self, job_id: str, task: dict[str, Any], admit: bool) -> concurrent.futures.Future[JobRecord]:
        fut: concurrent.futures.Future[JobRecord] = concurrent.futures.Future()
        with self._lock:
            if admit and self._admitted >= self.settings.queue_max:
                raise QueueFull(f"the work queue is full ({self.settings.queue_max} jobs queued or running); retry later")
            self._admitted += 1
            self._futures[job_id] = fut
        self._q.put((job_id, task))
        return fut

    def future(self, job_id: str) -> concurrent.futures.Future[JobRecord] | None:
        """The completion future of a job this process is running or holding, if any."""
        with self._lock:
            return self._futures.get(job_id)

    # -- the worker loop -------------------------------------------------------------------------------

    def _loop(self, worker: _ProcessWorker | None) -> None:
        if worker is not None:
            try:
                worker.ensure()
            except Exception as exc:  # noqa: BLE001 - retried on the first job; readiness stays false meanwhile
                log.error("worker failed to start: %s", exc)
        while not self._stopping.is_set():
            item = self._q.get()
            if item is None:
                return
            job_id, task = item
            with self._lock:
                self._running += 1
            try:
                final = self._run_one(job_id, task, worker)
            except Exception as exc:  # noqa: BLE001 - the loop must survive anything
                log.exception("job %s: unexpected error in the queue", job_id)
                final = self._end_failed(job_id, exc)
            finally:
                with self._lock:
                    self._running -= 1
                    self._admitted -= 1
                    fut = self._futures.pop(job_id, None)
            if fut is not None:
                if final is not None:
                    fut.set_result(final)
                else:
                    fut.set_exception(StoreError(f"job {job_id} could not be stored"))

    def _end_failed(self, job_id: str, exc: Exception) -> JobRecord | None:
        """Fail a job after an error outside its analysis, e.g. its result could not be stored (a full disk: 507).

        Its upload is removed (unless ``keep_uploads``). When the store cannot take the failure either, it is
        kept here (:meth:`unrecorded`), written by the next submission or at stop, and the job is returned as
        failed to whoever waits for it; None when the job cannot even be read.
        """
        if is_disk_full(exc):
            error, status = disk_full_message("the result"), 507
        else:
            error, status = f"internal error in the work queue: {exc.__class__.__name__}", 500
        if not self.settings.keep_uploads:
            _remove_upload(self.settings.uploads_dir, job_id)
        try:
            self.store.fail(job_id, error, status)
            return self.store.get(job_id)
        except StoreError:
            log.error("job %s: its failure could not be stored yet (%s)", job_id, error)
            with self._lock:
                self._unrecorded[job_id] = (error, status)
        try:
            job = self.store.get(job_id)
        except StoreError:
            return None
        return None if job is None else self.current(job)

    def unrecorded(self, job_id: str) -> tuple[str, int] | None:
        """The (error, HTTP status) of a job that failed but whose failure the store has not taken yet, or None."""
        with self._lock:
            return self._unrecorded.get(job_id)

    def current(self, job: JobRecord) -> JobRecord:
        """``job`` as the store will hold it once its unrecorded failure is written (unchanged if there is none)."""
        pending = self.unrecorded(job.id)
        if pending is None or job.status in ("done", "failed"):
            return job
        return job.model_copy(update={"status": "failed", "error": pending[0], "error_status": pending[1],
                                      "finished_at": job.finished_at or time.time()})

    def _record_failures(self) -> None:
        """Write the failures the store could not take before; stop at the first it still refuses."""
        with self._lock:
            pending = list(self._unrecorded.items())
        for job_id, (error, status) in pending:
            try:
                self.store.fail(job_id, error, status)
            except StoreError:
                return
            with self._lock:
                self._unrecorded.pop(job_id, None)

    def _run_one(self, job_id: str, task: dict[str, Any], worker: _ProcessWorker | None) -> JobRecord | None:
        job = self.store.mark_running(job_id)
        if job is None:  # finished meanwhile (another replica, or a duplicate entry)
            return self.store.get(job_id)
        if job.attempts > self.settings.max_attempts:
            self.store.fail(job_id, f"gave up after {job.attempts - 1} attempt(s)", 500)
            return self.store.get(job_id)
        t0 = time.perf_counter()
        try:
            outcome = worker.run(task, self.settings.job_timeout_s) if worker is not None else run_task(task)
        except WorkerTimeout as exc:
            outcome = {"ok": False, "status": 504, "error": str(exc)}
        except WorkerDied as exc:
            outcome = {"ok": False, "status": 500, "error": str(exc)}
        outcome["seconds"] = time.perf_counter() - t0
        if outcome.get("ok"):
            self.store.finish(job_id, outcome["result"], category=outcome.get("category"),
                              failure_mode=outcome.get("failure_mode"), summary=outcome.get("summary"))
        else:
            self.store.fail(job_id, str(outcome.get("error") or "failed"), int(outcome.get("status") or 500))
        final = self.store.get(job_id)
        if final is not None and final.status in ("done", "failed") and not self.settings.keep_uploads:
            _remove_upload(self.settings.uploads_dir, final.id)
        if final is not None and self.on_done is not None:
            try:
                self.on_done(final, outcome)
            except Exception:  # noqa: BLE001 - a failing observer must not fail the job
                log.exception("job %s: on_done observer failed", job_id)
        return final


def _remove_upload(uploads_dir: Path, job_id: str) -> None:
    """Remove a finished job's uploaded input (only ever inside the uploads folder, by job id)."""
    d = uploads_dir / job_id
    if d.parent == uploads_dir and d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
