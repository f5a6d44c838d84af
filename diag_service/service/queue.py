"""The bounded work queue: analyses run here, off the request path, in worker processes (or threads).

- **Bounded**: at most ``queue_max`` jobs queued or running; :meth:`JobQueue.submit` raises
  :class:`QueueFull` beyond it (the API answers 503 with ``Retry-After``).
- **Durable**: a job is a row in the :class:`~diag_service.service.store.Store` before it is queued,
  its result is written before it is reported, and :meth:`JobQueue.start` resumes what this replica
  had queued or running when it stopped (or ends it with a stated reason: input gone, too many attempts).
- **Isolated** (``worker_mode="process"``): each worker is a process that loads models once and is
  replaced when it dies or runs past ``job_timeout_s``; a crash fails one job, never the server.
- **Nothing raw left behind**: at start, and then every ``lease_s / 3`` seconds, upload folders that
  no job will read are removed (:meth:`JobQueue.clean_uploads`): a partial upload of a server killed
  mid-request (unredacted log text), and the inputs of finished jobs unless ``keep_uploads``.
- **Shared by replicas**: this replica renews the leases of the jobs it holds every ``lease_s / 3``
  seconds; an idle worker takes over a job of another replica whose lease has lapsed (that replica
  died: SIGKILL, power, network), see :class:`~diag_service.service.store.Store`. A job is stored
  done once: results and failures are written only by the replica holding the job.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import logging
import multiprocessing as mp
import os
import queue
import re
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

_UPLOAD_DIR = re.compile(r"[0-9a-f]{32}")  # uploads/<job uuid>/ (store.new_id)
# A folder of uploads/ without a job and without a write for this long belongs to no live request: far
# beyond the longest pause between two chunks of a body (body_read_timeout_s, 30 s), the bot's read
# timeout on a Slack download (60 s) and the inspection of an upload at the size limits.
ORPHAN_AFTER_S = 3600.0


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
        # the worker ends with this process (tasks.die_with_parent); on Linux strictly with this *thread*,
        # which is why only the long-lived dispatch thread that uses a worker starts it
        proc = ctx.Process(target=worker_main, args=(child, self.kb_cfg, os.getpid()), daemon=True, name="diag-worker")
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
        conn = self.conn  # kill() (at shutdown, from another thread) may clear self.conn meanwhile
        try:
            if conn is None:
                raise OSError("the worker was stopped")
            conn.send(task)
            if not conn.poll(timeout):
                self.kill()
                raise WorkerTimeout(f"the analysis ran longer than {timeout:.0f} s (job_timeout_s) and was stopped")
            return conn.recv()
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
        self._q: queue.Queue[tuple[str, dict[str, Any], JobRecord | None] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._admitted = 0
        self._running = 0
        self._futures: dict[str, concurrent.futures.Future[JobRecord]] = {}
        self._threads: list[threading.Thread] = []
        self._workers: list[_ProcessWorker] = []
        self._stopping = threading.Event()
        self._warm = threading.Event()  # thread mode: this process has loaded the models
        self._held: set[str] = set()  # jobs this replica has queued or running (their leases are renewed)
        self._watched: dict[str, concurrent.futures.Future[JobRecord]] = {}  # jobs another replica took over
        self._uploads_lock: int | None = None  # fd holding a shared flock on <data_dir>/uploads.lock while serving
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
        try:
            notes += self.clean_uploads(alone=self._hold_uploads())
        except (OSError, StoreError) as exc:
            log.warning("upload folders not cleaned: %s", exc)
        if self.settings.worker_mode == "thread":
            threading.Thread(target=self._warm_up, name="diag-warm", daemon=True).start()
        for i in range(self.settings.workers):
            worker = _ProcessWorker(self.kb_cfg) if self.settings.worker_mode == "process" else None
            if worker is not None:
                self._workers.append(worker)
            t = threading.Thread(target=self._loop, args=(worker,), name=f"diag-dispatch-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        hb = threading.Thread(target=self._heartbeat, name="diag-lease", daemon=True)
        hb.start()
        self._threads.append(hb)
        return notes

    @property
    def _tick_s(self) -> float:
        """How often leases are renewed and lapsed jobs looked for: three times per lease."""
        return self.settings.lease_s / 3

    def _heartbeat(self) -> None:
        """Renew the leases of the jobs held here; settle the futures of jobs another replica took over."""
        me = self.settings.replica_id
        while not self._stopping.wait(self._tick_s):
            with self._lock:
                held = list(self._held)
                watched = list(self._watched.items())
            try:
                self.clean_uploads(alone=False)
            except (OSError, StoreError) as exc:
                log.warning("upload folders not cleaned: %s", exc)
            try:
                self.store.renew(me, held, self.settings.lease_s)
                for id_, fut in watched:
                    job = self.store.get(id_)
                    if job is None or job.status in ("done", "failed"):
                        with self._lock:
                            self._watched.pop(id_, None)
                        if job is not None:
                            fut.set_result(job)
                        else:
                            fut.set_exception(StoreError(f"job {id_} is no longer in the store"))
            except StoreError as exc:
                log.warning("cannot renew the leases of %d job(s): %s", len(held), exc)

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
        if self._uploads_lock is not None:
            os.close(self._uploads_lock)  # releases the flock
            self._uploads_lock = None

    def _hold_uploads(self) -> bool:
        """Take a shared lock on ``<data_dir>/uploads.lock`` for as long as this queue runs; True when, just before,
        an exclusive one could be had: no other live service process uses this uploads folder."""
        d = self.settings.uploads_dir
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.settings.data_dir / "uploads.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._uploads_lock = fd
        return alone

    def clean_uploads(self, *, alone: bool) -> list[str]:
        """Remove the folders of ``uploads/`` that no job will read; returns what was removed, in words.

        A folder is ``uploads/<job uuid>/``. Its job finished: removed unless ``keep_uploads``. No job
        row: the upload never became a job (the server died mid-request, leaving raw, unredacted input):
        removed when ``alone`` (no other live server shares the folder, see :meth:`_hold_uploads`; the
        caller knows that no request of its own is under way), otherwise once nothing in it was written
        for :data:`ORPHAN_AFTER_S`. Queued or running jobs' folders stay. Raises ``OSError`` or
        :class:`~diag_service.service.store.StoreError` when the folder or the store cannot be read.
        """
        d = self.settings.uploads_dir
        if not d.is_dir():
            return []
        notes: list[str] = []
        for entry in d.iterdir():
            name = entry.name
            if not _UPLOAD_DIR.fullmatch(name) or not entry.is_dir() or entry.is_symlink():
                continue
            job = self.store.get(name)
            if job is None:
                if not alone and time.time() - _last_write(entry) < ORPHAN_AFTER_S:
                    continue  # may be an upload in progress on another live server, or of this one
                why = "partial upload of a request that never became a job"
            elif job.status in ("done", "failed") and not self.settings.keep_uploads:
                why = f"input of a {job.status} job"
            else:
                continue
            shutil.rmtree(entry, ignore_errors=True)
            if not entry.exists():
                notes.append(f"uploads/{name}: removed ({why})")
        return notes

    def _recover(self) -> list[str]:
        me = self.settings.replica_id
        notes: list[str] = []
        for job in self.store.unfinished(me):
            task = job.request
            if job.attempts >= self.settings.max_attempts:
                reason = (f"gave up after {job.attempts} attempt(s): the service stopped or its worker died "
                          "each time while this job ran")
                if self.store.fail(job.id, reason, 500, owner=me):
                    notes.append(f"{job.id}: {reason}")
                continue
            missing = _missing_input(task)
            if missing:
                reason = f"input lost across a restart ({missing} no longer exists); submit it again"
                if self.store.fail(job.id, reason, 410, owner=me):
                    notes.append(f"{job.id}: {reason}")
                continue
            if not self.store.requeue(job.id, me, lease_s=self.settings.lease_s):
                continue  # finished or taken over by another replica meanwhile
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
            self._held.add(job_id)
        self._q.put((job_id, task, None))
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
            try:
                item = self._q.get(timeout=self._tick_s)
            except queue.Empty:
                item = self._take_over()
                if item is None:
                    continue
            if item is None:
                return
            job_id, task, claimed = item
            with self._lock:
                self._running += 1
            try:
                final = self._run_one(job_id, task, worker, claimed)
            except Exception as exc:  # noqa: BLE001 - the loop must survive anything
                log.exception("job %s: unexpected error in the queue", job_id)
                final = self._end_failed(job_id, exc)
            finally:
                with self._lock:
                    self._running -= 1
                    self._admitted -= 1
                    self._held.discard(job_id)
                    fut = self._futures.pop(job_id, None)
                    if fut is not None and final is not None and final.status not in ("done", "failed"):
                        self._watched[job_id] = fut  # another replica runs it: settled when it is stored
                        fut = None
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
            self.store.fail(job_id, error, status, owner=self.settings.replica_id)
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

    def _take_over(self) -> tuple[str, dict[str, Any], JobRecord] | None:
        """An idle worker's turn: claim a job of another replica whose lease lapsed (None: nothing to take)."""
        if self._stopping.is_set():
            return None
        try:
            job = self.store.claim_next(self.settings.replica_id, self.settings.lease_s)
        except StoreError as exc:
            log.warning("cannot look for lapsed jobs: %s", exc)
            return None
        if job is None:
            return None
        log.warning("job %s: taken over (its replica's lease lapsed; attempt %d)", job.id, job.attempts)
        with self._lock:
            self._admitted += 1
            self._held.add(job.id)
        return job.id, job.request, job

    def _run_one(self, job_id: str, task: dict[str, Any], worker: _ProcessWorker | None,
                 claimed: JobRecord | None = None) -> JobRecord | None:
        me = self.settings.replica_id
        job = claimed or self.store.claim(job_id, me, self.settings.lease_s)
        if job is None:  # finished meanwhile, or taken over by another replica
            return self.store.get(job_id)
        if job.attempts > self.settings.max_attempts:
            self.store.fail(job_id, f"gave up after {job.attempts - 1} attempt(s)", 500, owner=me)
            return self.store.get(job_id)
        missing = _missing_input(task) if claimed is not None else None
        t0 = time.perf_counter()
        if missing:
            outcome = {"ok": False, "status": 410, "error": f"input lost: {missing} does not exist on the replica that "
                       "took the job over (its replica died; uploads must be on storage all replicas share)"}
        else:
            try:
                outcome = worker.run(task, self.settings.job_timeout_s) if worker is not None else run_task(task)
            except WorkerTimeout as exc:
                outcome = {"ok": False, "status": 504, "error": str(exc)}
            except WorkerDied as exc:
                outcome = {"ok": False, "status": 500, "error": str(exc)}
        outcome["seconds"] = time.perf_counter() - t0
        if outcome.get("ok"):
            stored = self.store.finish(job_id, outcome["result"], category=outcome.get("category"),
                                       failure_mode=outcome.get("failure_mode"), summary=outcome.get("summary"), owner=me)
        else:
            stored = self.store.fail(job_id, str(outcome.get("error") or "failed"), int(outcome.get("status") or 500),
                                     owner=me)
        if not stored:
            log.warning("job %s: its result was not stored: another replica holds the job now (lease lapsed)", job_id)
        final = self.store.get(job_id)
        if final is not None and final.status in ("done", "failed") and not self.settings.keep_uploads:
            _remove_upload(self.settings.uploads_dir, final.id)
        if stored and final is not None and self.on_done is not None:
            try:
                self.on_done(final, outcome)
            except Exception:  # noqa: BLE001 - a failing observer must not fail the job
                log.exception("job %s: on_done observer failed", job_id)
        return final


def _last_write(folder: Path) -> float:
    """The newest modification time (epoch seconds) of ``folder`` and everything under it (links not followed)."""
    newest = folder.lstat().st_mtime
    for root, dirs, files in os.walk(folder, followlinks=False):
        for n in (*dirs, *files):
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(os.path.join(root, n)).st_mtime)
    return newest


def _missing_input(task: dict[str, Any]) -> str | None:
    """The first input path of ``task`` that does not exist (None: all there)."""
    return next((p for p in (task.get("path"), task.get("dumps_dir")) if p and not Path(p).exists()), None)


def _remove_upload(uploads_dir: Path, job_id: str) -> None:
    """Remove a finished job's uploaded input (only ever inside the uploads folder, by job id)."""
    d = uploads_dir / job_id
    if d.parent == uploads_dir and d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
