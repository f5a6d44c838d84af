"""Live jobs over HTTP: node agents (``diag watch``) post their batches here, and anyone with ``read`` sees
the live job and its latest diagnosis. The logic is :mod:`diag_service.live.jobs`; this module adds the
routes, the ``agent`` scope, and the diagnosis queue of the service (each live diagnosis is an ordinary
stored diagnosis: ``GET /v1/diagnoses/{id}`` and the pages show it).

* ``POST /v1/live/jobs/{job_id}/batches`` (scope ``agent``): an :class:`~diag_service.live.contract.AgentBatch`
  in, a :class:`~diag_service.live.contract.BatchAck` out. A resend is acknowledged with ``applied: false``;
  a gap is refused with 409 ``{"detail", "reason": "seq_gap", "expected_seq"}``; bounds with 413/422.
* ``GET /v1/live/jobs/{job_id}`` (scope ``read``): :class:`~diag_service.live.jobs.LiveJobView`.
* ``GET /v1/live/jobs/{job_id}/etpr`` (scope ``read``): the job's ETPR ledger so far (``format=html``: the page).
* ``GET /v1/live/jobs`` (scope ``read``): the live jobs, most recently changed first.
"""

from __future__ import annotations

import concurrent.futures
import logging
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel

from diag_service.live.contract import AgentBatch, BatchAck
from diag_service.live.jobs import LiveJobs, LiveJobView, LiveRefused, SeqGap
from diag_service.service.api import ctx_of, json_body, scope
from diag_service.service.auth import Principal
from diag_service.service.context import ServiceContext
from diag_service.service.store import JobRecord
from diag_service.service.uploads import Refused

log = logging.getLogger("diag_service.service.live")

router = APIRouter(tags=["live"])

Agent = Annotated[Principal, Depends(scope("agent"))]
Read = Annotated[Principal, Depends(scope("read"))]


class LiveJobList(BaseModel):
    items: list[LiveJobView]


def install(app: FastAPI, ctx: ServiceContext) -> LiveJobs:
    """Create the live-job registry under ``<data_dir>/live`` (``app.state.live``) and add the routes."""
    live = LiveJobs(ctx.settings.data_dir / "live", ctx.settings.live, storm_restarts=ctx.policy.history.storm_restarts)
    live.submit = lambda job_id, folder, provisional: _submit(ctx, live, job_id, folder, provisional)
    live.on_final = ctx.alert_live_diagnosis  # the job's final diagnosis, once per incident, to people
    app.state.live = live
    app.include_router(router)
    return live


def _submit(ctx: ServiceContext, live: LiveJobs, job_id: str, folder: Path, provisional: bool) -> str | None:
    """Queue a diagnosis of a live job's folder; its id, or None when the queue is full (asked again later).
    A provisional one skips the local model's narrative (seconds matter while the job is still allocated).
    The diagnosis is given the job's restarts from the registry (``Diagnosis.restarts``: the recovery policy's
    restart facts) and does not count its own restart and node faults in the recovery history (the service
    records each incident's once, :meth:`ServiceContext.alert_live_diagnosis`)."""
    task = {**ctx.diagnose_task(folder, job_id), "live": {"provisional": provisional}, "record_counts": False}
    restarts = live.restarts(job_id)
    if restarts is not None:
        task["restarts"] = restarts.model_dump(mode="json")
    if provisional:
        task["llm"] = False
    try:
        job, fut = ctx.submit("diagnose", task, job_id=job_id)
    except Refused as exc:
        log.warning("live job %s: diagnosis not queued now (%s)", job_id, exc.message)
        return None

    def done(f: concurrent.futures.Future[JobRecord]) -> None:
        try:
            rec = f.result()
        except Exception:  # noqa: BLE001 - the store failed: counted as a failed diagnosis, the next is asked for
            log.exception("live job %s: diagnosis %s outcome unknown", job_id, job.id)
            live.diagnosis_finished(job_id, job.id, status="failed", finished_at=None)
            return
        _record(live, job_id, rec)

    fut.add_done_callback(done)
    return job.id


def _record(live: LiveJobs, job_id: str, rec: JobRecord) -> None:
    live.diagnosis_finished(job_id, rec.id, status=rec.status, finished_at=rec.finished_at, category=rec.category,
                            failure_mode=rec.failure_mode, summary=rec.summary)


def live_of(request: Request) -> LiveJobs:
    return request.app.state.live


def _refused(ctx: ServiceContext, exc: LiveRefused) -> JSONResponse:
    ctx.metrics.refusals.labels(exc.reason).inc()
    body: dict[str, Any] = {"detail": exc.message, "reason": exc.reason}
    if isinstance(exc, SeqGap):
        body["expected_seq"] = exc.expected_seq
    return JSONResponse(body, status_code=exc.status)


@router.post("/v1/live/jobs/{job_id:path}/batches", response_model=BatchAck,
             responses={409: {"description": "A gap in the agent's seq: resend from expected_seq"},
                        413: {"description": "A bound was exceeded"}, 422: {"description": "Invalid batch"}})
async def post_batch(job_id: str, request: Request, _: Agent) -> Any:
    """Apply one agent batch to the live job, exactly once per (job, agent, seq)."""
    ctx = ctx_of(request)
    batch: AgentBatch = await json_body(request, AgentBatch)
    try:
        ack, _trigger = await run_in_threadpool(live_of(request).apply, job_id, batch)
    except LiveRefused as exc:
        ctx.metrics.live_batches.labels("refused").inc()
        return _refused(ctx, exc)
    except OSError as exc:
        log.error("live job %s: cannot write its folder: %s", job_id, exc)
        return JSONResponse({"detail": "the live store cannot be written; retry later", "reason": "live_store"},
                            status_code=503, headers={"Retry-After": "5"})
    ctx.metrics.live_batches.labels("applied" if ack.applied else "resent").inc()
    if ack.applied:
        for ev in batch.events:
            if ev.event.value not in ("heartbeat", "worker", "progress"):
                ctx.metrics.live_events.labels(ev.event.value).inc()
    return ack


def _view(ctx: ServiceContext, live: LiveJobs, job_id: str) -> LiveJobView | None:
    for diag_id in live.pending_diagnoses(job_id):  # outcomes that finished while no callback listened (a restart)
        rec = ctx.store.get(diag_id)
        if rec is not None and rec.status in ("done", "failed"):
            _record(live, job_id, rec)
    return live.view(job_id)


@router.get("/v1/live/jobs", response_model=LiveJobList)
async def list_live_jobs(request: Request, _: Read,
                         limit: Annotated[int, Query(ge=1, le=500)] = 100) -> LiveJobList:
    """The live jobs, most recently changed first."""
    ctx, live = ctx_of(request), live_of(request)

    def views() -> list[LiveJobView]:
        return [v for j in live.job_ids(limit) if (v := _view(ctx, live, j)) is not None]

    return LiveJobList(items=await run_in_threadpool(views))


def _etpr(live: LiveJobs, job_id: str, by: str, html: bool) -> Any:
    """The live job's ETPR report so far (JSON) or its HTML page; None when there is no such live job."""
    from diag_service.etpr import build_report, compute_ledger, load_events
    from diag_service.etpr.report import render_html

    with tempfile.TemporaryDirectory(prefix="diag-live-etpr-") as tmp:
        if not live.snapshot(job_id, Path(tmp)):
            return None
        events, issues = load_events(Path(tmp), source="live", job_id=job_id)
    ledger = compute_ledger(events, by_week=by == "week")
    rep = build_report(ledger, source=f"live:{job_id}", by=by, issues=issues)
    return HTMLResponse(render_html(rep, ledger)) if html else JSONResponse(rep.model_dump(mode="json"))


@router.get("/v1/live/jobs/{job_id:path}/etpr", responses={404: {"description": "No such live job"}})
async def get_live_etpr(job_id: str, request: Request, _: Read,
                        by: Annotated[Literal["category", "failure_mode", "node", "week", "cause"], Query()] = "category",
                        format: Annotated[Literal["json", "html"], Query()] = "json") -> Any:  # noqa: A002 - the query name
    """The live job's ETPR ledger so far (``diag_service.etpr.EtprReport``; ``format=html``: the ETPR page), from
    the lifecycle events its agents sent (the ``live`` event source): detection, hang and diagnosis delays are
    unproductive time as they happen. A running job's ledger ends at its latest event."""
    ctx, live = ctx_of(request), live_of(request)
    try:
        got = await run_in_threadpool(_etpr, live, job_id, by, format == "html")
    except LiveRefused as exc:
        return _refused(ctx, exc)
    if got is None:
        raise HTTPException(404, f"no live job {job_id!r}")
    return got


@router.get("/v1/live/jobs/{job_id:path}", response_model=LiveJobView, responses={404: {"description": "No such live job"}})
async def get_live_job(job_id: str, request: Request, _: Read) -> Any:
    """A live job: status, agents (stale ones flagged), detection and diagnosis times, the latest diagnosis."""
    ctx, live = ctx_of(request), live_of(request)
    try:
        view = await run_in_threadpool(_view, ctx, live, job_id)
    except LiveRefused as exc:
        return _refused(ctx, exc)
    if view is None:
        raise HTTPException(404, f"no live job {job_id!r}")
    return view
