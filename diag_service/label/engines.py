"""Where the jobs run: a local process pool (default) or Ray Data. Both run the same :class:`Labeller`.

An engine takes the pending jobs and a *sink*; it calls the sink with each batch of finished rows
as soon as the batch is done (the sink commits them to the ledger). Engines never decide what a
row holds, so both give the same rows.

- :class:`LocalEngine`: ``concurrent.futures.ProcessPoolExecutor`` (spawned workers, one
  :class:`Labeller` each, built once by the initializer). At most ``2 x workers`` batches are in
  flight, so memory stays flat on any archive size. A worker that dies (killed by the OS, a crash in
  native code) breaks the pool: the pool is rebuilt, the batches that were in flight are run again
  one job at a time, and a job that kills its worker alone becomes an error row.
- :class:`RayEngine`: ``ray.data.from_items(jobs).map_batches(actor class, ActorPoolStrategy)``:
  one :class:`Labeller` per actor, so the knowledge base's model loads once per actor. Actors take
  a fraction of a CPU by default (see :func:`ray_cpus_per_worker`): on a small machine, actors that
  each take a whole CPU starve Ray Data's own tasks and the run never progresses.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Protocol

from diag_service.errors import DiagError, ErrorKind
from diag_service.label.models import Job, LabelOptions, LabelRow
from diag_service.label.worker import Labeller, error_row, rows_to_columns

Sink = Callable[[list[LabelRow]], None]
#: Builds the per-worker labeller; must be importable by name in the workers (a module-level class or function).
LabellerFactory = Callable[[LabelOptions], Labeller]

log = logging.getLogger(__name__)


class EngineError(DiagError, RuntimeError):
    """The engine cannot run at all (workers cannot start, Ray unreachable or not installed)."""

    kind = ErrorKind.INTERNAL


class Engine(Protocol):
    name: str
    workers: int

    def run(self, jobs: list[Job], options: LabelOptions, sink: Sink) -> None:
        """Label ``jobs`` and hand every finished batch of rows to ``sink``; return when all are handed over."""
        ...


def batches(jobs: list[Job], size: int) -> list[list[Job]]:
    return [jobs[i : i + size] for i in range(0, len(jobs), max(1, size))]


# -- local process pool ------------------------------------------------------------------------------

_worker_labeller: Labeller | None = None
_worker_init_error: str | None = None


class WorkerInitError(DiagError):
    """A worker could not build its labeller (e.g. ``--kb on`` and no knowledge base)."""

    kind = ErrorKind.INTERNAL


#: Set in every worker before any model library is imported (a value set by the user wins). One job's
#: embedding is far too small to gain from intra-op threads, and N workers x N threads each on N cores
#: (torch, FAISS/OpenMP spin-waiting) made the knowledge-base lookups 3-10x slower here. Ray does the same
#: for its actors (OMP_NUM_THREADS = the actor's CPUs).
WORKER_ENV = {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
    "TQDM_DISABLE": "1",  # model-loading bars would scribble over the driver's progress bar
}


@contextmanager
def worker_env() -> Iterator[None]:
    """:data:`WORKER_ENV` in this process's environment while worker processes are spawned (values already set win)."""
    added = [k for k in WORKER_ENV if k not in os.environ]
    for k in added:
        os.environ[k] = WORKER_ENV[k]
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _init_worker(factory: LabellerFactory, options: LabelOptions) -> None:
    global _worker_labeller, _worker_init_error
    for k, v in WORKER_ENV.items():
        os.environ.setdefault(k, v)
    try:
        _worker_labeller = factory(options)
    except Exception as exc:  # noqa: BLE001 - reported to the driver by the first task
        _worker_init_error = f"{type(exc).__name__}: {exc}"


def _run_batch(jobs: list[Job]) -> list[LabelRow]:
    if _worker_labeller is None:
        raise WorkerInitError(_worker_init_error or "worker not initialised")
    return _worker_labeller.label_batch(jobs)


class LocalEngine:
    """A pool of ``workers`` processes on this machine (default: one per core)."""

    name = "local"

    def __init__(self, workers: int | None = None, batch_size: int = 8, factory: LabellerFactory = Labeller) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.batch_size = max(1, batch_size)
        self.factory = factory

    def _pool(self, options: LabelOptions, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(self.factory, options),
        )

    def run(self, jobs: list[Job], options: LabelOptions, sink: Sink) -> None:
        """Run every job; raises :class:`EngineError` when workers cannot start (nothing is labelled then)."""
        queue = deque(batches(jobs, self.batch_size))
        suspects: list[Job] = []
        with worker_env():  # spawned workers start with it, before numpy/torch/FAISS size their thread pools
            pool = self._pool(options, min(self.workers, max(1, len(queue))))
            try:
                pool = self._drain(pool, queue, options, sink, suspects, max_in_flight=2 * self.workers)
                # Jobs that were in flight when a worker died: one at a time, to find the one that kills it.
                for job in suspects:
                    pool = self._drain(pool, deque([[job]]), options, sink, None, max_in_flight=1)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)

    def _drain(
        self, pool: ProcessPoolExecutor, queue: deque[list[Job]], options: LabelOptions, sink: Sink,
        suspects: list[Job] | None, max_in_flight: int,
    ) -> ProcessPoolExecutor:
        in_flight: dict[Future[list[LabelRow]], list[Job]] = {}
        breaks = 0
        while queue or in_flight:
            while queue and len(in_flight) < max_in_flight:
                batch = queue.popleft()
                try:
                    in_flight[pool.submit(_run_batch, batch)] = batch
                except BrokenProcessPool:
                    queue.appendleft(batch)
                    break
            if not in_flight:  # the pool broke before anything could be submitted
                pool = self._replace(pool, options)
                breaks += 1
                if breaks > 3:
                    raise EngineError("worker processes keep dying before running any job")
                continue
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            broken = False
            for fut in done:
                batch = in_flight.pop(fut)
                try:
                    rows = fut.result()
                except WorkerInitError as exc:
                    raise EngineError(f"workers cannot start: {exc}") from exc
                except BrokenProcessPool:
                    broken = True
                    if suspects is not None:
                        suspects.extend(batch)
                    else:  # already alone: this job kills its worker
                        sink([error_row(j, "worker process died while labelling this bundle (killed by the OS? out of memory?)")
                              for j in batch])
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a row that cannot be pickled back
                    rows = [error_row(j, f"internal error: {type(exc).__name__}: {exc}") for j in batch]
                breaks = 0
                sink(rows)
            if broken:
                # every other batch in flight failed with the pool; they are suspects too
                for fut, batch in list(in_flight.items()):
                    try:
                        rows = fut.result()
                    except Exception:  # noqa: BLE001
                        if suspects is not None:
                            suspects.extend(batch)
                        else:
                            queue.appendleft(batch)
                    else:
                        sink(rows)
                in_flight.clear()
                pool = self._replace(pool, options)
                breaks += 1
                if breaks > 50:
                    raise EngineError("worker processes keep dying; giving up (progress is kept, rerun to continue)")
        return pool

    def _replace(self, pool: ProcessPoolExecutor, options: LabelOptions) -> ProcessPoolExecutor:
        pool.shutdown(wait=False, cancel_futures=True)
        log.warning("a worker process died; restarting the pool")
        return self._pool(options, self.workers)


# -- Ray Data --------------------------------------------------------------------------------------


class RayLabeller:
    """The Ray Data actor: one :class:`Labeller` per actor, built once, then fed batches of jobs."""

    def __init__(self, factory: LabellerFactory, options_json: str) -> None:
        for k, v in WORKER_ENV.items():
            os.environ.setdefault(k, v)
        self.labeller = factory(LabelOptions.model_validate_json(options_json))

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        jobs = [Job.model_validate_json(s) for s in batch["job"]]
        return rows_to_columns(self.labeller.label_batch(jobs))


def ray_cpus_per_worker(cluster_cpus: float, workers: int) -> float:
    """CPUs to reserve per actor: up to 1, but leaving one CPU of the cluster free for Ray Data's own tasks.

    2 CPUs and 2 workers: 0.5 each; 2 CPUs and 1 worker: 1; 64 CPUs and 64 workers: 0.98. Never below 0.1.
    """
    share = (cluster_cpus - 1) / max(1, workers)
    return max(0.1, min(1.0, math.floor(share * 100) / 100))


class RayEngine:
    """Ray Data ``map_batches`` with an actor pool of ``workers`` actors (default: the cluster's CPUs).

    ``address``: ``None`` starts a local Ray instance for the run (stopped afterwards); ``"auto"`` or
    ``ray://host:10001`` joins a running cluster (whose workers must have this package installed and
    see the archive's paths). If Ray is already initialised in this process it is used as is.
    """

    name = "ray"

    def __init__(
        self, address: str | None = None, workers: int | None = None, batch_size: int = 8,
        cpus_per_worker: float | None = None, factory: LabellerFactory = Labeller,
    ) -> None:
        self.address = address
        self.workers = workers or 0
        self.batch_size = max(1, batch_size)
        self.cpus_per_worker = cpus_per_worker
        self.factory = factory

    def run(self, jobs: list[Job], options: LabelOptions, sink: Sink) -> None:
        try:
            import ray
            import ray.data
        except ImportError as exc:
            raise EngineError(f"--engine ray needs Ray Data: pip install 'ray[data]' ({exc})") from exc
        started = False
        if not ray.is_initialized():
            t0 = time.perf_counter()
            try:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ...
                raise EngineError(f"cannot start or reach Ray ({self.address or 'local'}): {exc}") from exc
            started = True
            log.info("ray.init took %.1f s", time.perf_counter() - t0)
        try:
            if jobs:
                self._run(ray, jobs, options, sink)
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray: Any, jobs: list[Job], options: LabelOptions, sink: Sink) -> None:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self.workers = self.workers or max(1, int(cpus))
        per = self.cpus_per_worker or ray_cpus_per_worker(cpus, self.workers)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        blocks = max(1, min(math.ceil(len(jobs) / self.batch_size), 10_000))
        ds = ray.data.from_items([{"job": j.model_dump_json()} for j in jobs], override_num_blocks=blocks)
        ds = ds.map_batches(
            RayLabeller,
            fn_constructor_kwargs={"factory": self.factory, "options_json": options.model_dump_json()},
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=per,
            batch_size=self.batch_size,
            batch_format="numpy",
        )
        try:
            for out in ds.iter_batches(batch_size=None, batch_format="numpy"):
                sink([LabelRow.model_validate_json(s) for s in out["row"]])
        except Exception as exc:  # noqa: BLE001 - an actor that cannot start, a lost node...
            raise EngineError(f"Ray run failed (progress is kept, rerun to continue): {type(exc).__name__}: {exc}") from exc
