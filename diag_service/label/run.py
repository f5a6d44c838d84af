"""Label an archive: list jobs, run the pending ones on an engine, write parts, summarise clusters and the archive.

:func:`label_archive` is the entry point (the CLI is a thin layer over it). It is resumable: run it
again with the same archive and output and it continues where the last run stopped (see
:mod:`diag_service.label.ledger` for why nothing is lost or duplicated).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from diag_service.errors import DiagError, ErrorKind
from diag_service.label.engines import Engine, EngineError, LocalEngine, RayEngine
from diag_service.label.inputs import ArchiveError, discover_jobs
from diag_service.label.ledger import SUCCESS, SUMMARY_JSON, SUMMARY_MD, Ledger, LedgerError, atomic_write_bytes
from diag_service.label.models import Job, LabelOptions, LabelRow
from diag_service.label.summary import LabelSummary, SummarizeFn, cluster_summary, load_summarizer, render_markdown, summarise
from diag_service.label.worker import Labeller, error_row
from diag_service.signatures import site_catalog

__all__ = [
    "ArchiveError", "EngineError", "LabelConfigError", "LabelRequest", "LabelResult", "LedgerError", "ProgressSink",
    "label_archive",
]


class LabelConfigError(DiagError, ValueError):
    """The request cannot be honoured as given (``--llm`` without the summary model)."""

    kind = ErrorKind.INPUT


class LabelRequest(BaseModel):
    """What to label and how. ``out`` is a folder (a Parquet dataset); see the CLI for each option."""

    archive: str
    out: str
    engine: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    workers: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=8, ge=1)
    llm: bool = False
    options: LabelOptions = Field(default_factory=LabelOptions)
    part_rows: int = Field(default=1000, ge=1, description="Write a part once this many rows are waiting.")
    part_interval_s: float = Field(default=60.0, ge=0, description="... or once this much time has passed since the last part.")
    fresh: bool = Field(default=False, description="Delete this output's previous rows and ledger and start over.")


class LabelResult(BaseModel):
    out: str
    summary: LabelSummary
    labelled_now: int = Field(description="Rows committed by this run.")
    done_before: int = Field(description="Rows already committed by earlier runs (resume).")
    seconds: float
    jobs_per_s: float = Field(description="This run's rows per second of labelling (engine start included).")
    summary_json: str
    summary_md: str
    notes: list[str] = Field(default_factory=list)


class ProgressSink(Protocol):
    """Receives progress: ``start`` once per stage, ``advance`` as jobs finish, ``stop`` at the end of the stage."""

    def start(self, stage: str, total: int, done: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def stop(self) -> None: ...


class NoProgress:
    """A :class:`ProgressSink` that shows nothing (the default; ``diag label --no-progress``)."""

    def start(self, stage: str, total: int, done: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def stop(self) -> None:
        pass


def make_engine(req: LabelRequest) -> Engine:
    """The engine a request asks for."""
    if req.engine == "ray":
        return RayEngine(address=req.ray_address, workers=req.workers, batch_size=req.batch_size)
    return LocalEngine(workers=req.workers, batch_size=req.batch_size)


def label_archive(req: LabelRequest, progress: ProgressSink | None = None, engine: Engine | None = None) -> LabelResult:
    """Label every job of ``req.archive`` into ``req.out``; returns the archive's summary.

    Raises :class:`ArchiveError` (archive missing or not listable), :class:`LedgerError` (output busy,
    not ours, or started for another archive/options), :class:`EngineError` (engine cannot run),
    :class:`LabelConfigError` (``--llm`` without :mod:`diag_service.llm`), and the signature catalog's
    ``SignatureError``. A bundle that cannot be labelled is never an exception: it is an error row.
    """
    t_start = time.perf_counter()
    progress = progress or NoProgress()
    archive = str(Path(req.archive).resolve())
    out = Path(req.out).resolve()
    summarizer = None
    if req.llm:
        summarizer = load_summarizer()
        if summarizer is None:
            raise LabelConfigError("--llm: the summary model (diag_service.llm, summarize()) is not installed")
    site_catalog(req.options.signatures_dir)  # a broken catalog stops the run here, not in every job
    if not Path(archive).exists():
        raise ArchiveError(f"no such archive: {archive}")
    engine = engine or make_engine(req)
    notes: list[str] = []
    with Ledger(out) as ledger:
        if req.fresh:
            ledger.reset()
        notes += ledger.bind(archive, req.options.fingerprint())
        notes += ledger.reconcile()
        (out / SUCCESS).unlink(missing_ok=True)
        jobs = discover_jobs(archive, skip=[out])
        new = ledger.add_jobs(jobs)
        if notes and new:
            notes.append(f"{new} job(s) new since the last run")
        ledger.record([error_row(j, j.input_error) for j in jobs if j.input_error])
        pending = ledger.pending()
        total, done_before = ledger.counts()

        committed = 0
        last_part = time.monotonic()

        def sink(rows: list[LabelRow]) -> None:
            nonlocal committed, last_part
            n = ledger.record(rows)
            committed += n
            progress.advance(n)
            waiting = ledger.unwritten()
            if waiting >= req.part_rows or (waiting and time.monotonic() - last_part >= req.part_interval_s):
                ledger.write_part()
                last_part = time.monotonic()

        progress.start("label", total, done_before)
        t_label = time.perf_counter()
        try:
            if pending:
                engine.run(pending, req.options, sink)
        finally:
            progress.stop()
            label_s = time.perf_counter() - t_label
            ledger.write_part()  # whatever was committed, even when the engine failed
        missing = ledger.pending()
        if missing:  # an engine returned without a row for some jobs: never leave a gap silently
            raise EngineError(f"{len(missing)} job(s) got no row from the {engine.name} engine (first: {missing[0].job_id}); "
                              "rerun to continue")
        if summarizer is not None:
            _summarise_clusters(ledger, req, summarizer, progress, notes)
        ledger.refresh_parts()
        rows = ledger.rows()
        run_info = {
            "engine": engine.name, "workers": engine.workers, "batch_size": req.batch_size, "labelled_now": committed,
            "done_before": done_before, "label_seconds": round(label_s, 2),
            "jobs_per_s": round(committed / label_s, 2) if label_s > 0 and committed else 0.0,
            "parts": len(ledger.parts()), "llm": req.llm, "kb": req.options.kb, "notes": notes,
        }
        summary = summarise(rows, archive, str(out), ledger.cluster_summaries(), run=run_info)
        atomic_write_bytes(out / SUMMARY_JSON, (summary.model_dump_json(indent=2) + "\n").encode("utf-8"))
        atomic_write_bytes(out / SUMMARY_MD, render_markdown(summary).encode("utf-8"))
        atomic_write_bytes(out / SUCCESS, (json.dumps({"jobs": total, "rows": len(rows)}) + "\n").encode("utf-8"))
    return LabelResult(
        out=str(out), summary=summary, labelled_now=committed, done_before=done_before,
        seconds=round(time.perf_counter() - t_start, 2), jobs_per_s=run_info["jobs_per_s"],
        summary_json=str(out / SUMMARY_JSON), summary_md=str(out / SUMMARY_MD), notes=notes,
    )


def _summarise_clusters(
    ledger: Ledger, req: LabelRequest, summarizer: tuple[SummarizeFn, str], progress: ProgressSink, notes: list[str],
) -> None:
    """One model summary per cluster without one (resumable: each is committed as it is written)."""
    fn, model_name = summarizer
    todo: list[tuple[str, Job, int]] = ledger.clusters_to_summarise()
    if not todo:
        return
    labeller = Labeller(req.options)  # the representative is diagnosed again, here, the same way as in the workers
    progress.start("summaries", len(todo), 0)
    failed = 0
    try:
        for tid, job, _size in todo:
            try:
                d = labeller.diagnose(job)
                ledger.add_cluster_summary(cluster_summary(tid, job.job_id, d, fn, model_name))
            except Exception as exc:  # noqa: BLE001 - a summary that fails is left empty and retried next run
                failed += 1
                if failed <= 3:
                    notes.append(f"summary of cluster {tid} (job {job.job_id}) failed: {type(exc).__name__}: {exc}")
            progress.advance(1)
    finally:
        progress.stop()
    if failed:
        notes.append(f"{failed} cluster summary(ies) failed; rerun with --llm to retry them")
