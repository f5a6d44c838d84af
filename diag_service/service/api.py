"""The JSON API (``/v1``) and the probes. Each route checks its input, stores and queues work, and returns
the core's models; the analysis itself runs in the queue's workers (:mod:`diag_service.service.tasks`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from diag_service.domain import JOB_ID_PATTERN, HangReport, is_job_id
from diag_service.service.auth import Principal
from diag_service.service.context import Conflict, ServiceContext
from diag_service.service.faults import DiskFull, disk_full_message, is_disk_full
from diag_service.service.schemas import (
    Accepted,
    DiagnosePathBody,
    DiagnosisEnvelope,
    DiagnosisList,
    DiagnosisSummary,
    EtprBody,
    EtprEnvelope,
    FeedbackBody,
    FeedbackOut,
    FeedbackResult,
    HangEnvelope,
    HangPathBody,
    Health,
    JobEnvelope,
    KBAddBody,
    KBSearchBody,
    Links,
    OffenderList,
    SlowBody,
    SlowEnvelope,
    StepsBody,
    StepsResult,
)
from diag_service.service.store import JobRecord, new_id
from diag_service.service.uploads import (
    Refused,
    extract_bundle,
    inspect_bundle,
    job_id_from_name,
    resolve_allowed,
    safe_filename,
    save_stream,
    with_extension,
)
from diag_service.slow import SlowReport

router = APIRouter()

_JOB_ID_FIELD = JOB_ID_PATTERN
_RAW_TYPES = ("application/octet-stream", "application/gzip", "application/x-gzip", "application/zip", "application/x-tar",
              "application/x-gtar", "text/plain")


def ctx_of(request: Request) -> ServiceContext:
    return request.app.state.ctx


def scope(name: str) -> Callable[[Request], Principal]:
    """A dependency that authenticates the request and requires ``name`` (``read``, ``diagnose``, ``kb:write``)."""

    def dep(request: Request) -> Principal:
        return ctx_of(request).auth.check(request, name)

    dep.__name__ = f"scope_{name.replace(':', '_')}"
    return dep


Read = Annotated[Principal, Depends(scope("read"))]
Submit = Annotated[Principal, Depends(scope("diagnose"))]
KBWrite = Annotated[Principal, Depends(scope("kb:write"))]

_SELF = {"diagnose": "/v1/diagnoses/{id}", "hang": "/v1/jobs/{id}", "slow": "/v1/jobs/{id}", "etpr": "/v1/jobs/{id}"}


def state(job: JobRecord) -> dict[str, Any]:
    """The :class:`~diag_service.service.schemas.JobState` fields of a job."""
    return {
        "id": job.id, "kind": job.kind, "status": job.status, "job_id": job.job_id, "created_at": job.created_at,
        "started_at": job.started_at, "finished_at": job.finished_at, "attempts": job.attempts, "error": job.error,
        "error_status": job.error_status,
        "links": Links(self=_SELF[job.kind].format(id=job.id),
                       page=f"/ui/diagnoses/{job.id}" if job.kind == "diagnose" else None),
    }


def accepted(job: JobRecord) -> JSONResponse:
    body = Accepted(**state(job))
    return JSONResponse(body.model_dump(mode="json"), status_code=202, headers={"Location": body.links.self})


def failed_response(job: JobRecord) -> JSONResponse:
    return JSONResponse({"detail": job.error or "failed", "id": job.id, "status": job.status},
                        status_code=job.error_status or 500)


# -- receiving bodies ----------------------------------------------------------------------------------


async def _copy_upload(up: UploadFile, dest: Path, max_bytes: int) -> int:
    n = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(dest, "wb") as fh:
            while chunk := await up.read(1 << 20):
                n += len(chunk)
                if n > max_bytes:
                    raise Refused(413, f"upload larger than the limit of {max_bytes} bytes (limits.max_upload_bytes)",
                                  "upload_size")
                fh.write(chunk)
    except BaseException as exc:
        dest.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFull(disk_full_message("the upload")) from exc
        raise
    return n


async def receive_file(request: Request, ctx: ServiceContext, field: str, job_uuid: str, default_name: str,
                       ) -> tuple[Path, int, dict[str, Any]]:
    """Save an uploaded file (multipart field ``field``, or the raw body) to ``uploads/<job_uuid>/``.

    Returns the path, its size and the other form fields (multipart) or query parameters (raw body).
    Refuses (:class:`Refused`) a missing file (422) or one over ``max_upload_bytes`` (413).
    """
    limit = ctx.settings.limits.max_upload_bytes
    folder = ctx.settings.uploads_dir / job_uuid
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = {}
    if ctype == "multipart/form-data":
        try:
            form = await request.form(max_files=1, max_fields=32, max_part_size=64 << 10)
        except HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - starlette's MultiPartException and parser errors
            if is_disk_full(exc):  # the parser spools large parts to a temporary file
                raise DiskFull(disk_full_message("the upload")) from exc
            raise Refused(400, f"invalid multipart body: {exc}", "bad_multipart") from None
        try:
            up = form.get(field)
            if not isinstance(up, UploadFile):
                raise Refused(422, f"multipart field {field!r} with a file is required", "missing_file")
            dest = folder / safe_filename(up.filename, default_name)
            n = await _copy_upload(up, dest, limit)
            for k in form:
                if k != field:
                    vals = [v for v in form.getlist(k) if isinstance(v, str)]
                    fields[k] = vals if k == "exclude" else (vals[-1] if vals else None)
        finally:
            await form.close()
        return dest, n, fields
    if ctype in _RAW_TYPES or ctype == "":
        dest = folder / safe_filename(request.query_params.get("filename"), default_name)
        n = await save_stream(request.stream(), dest, limit)
        if n == 0:
            shutil.rmtree(folder, ignore_errors=True)
            raise Refused(422, "empty request body: send the bundle as multipart field "
                               f"{field!r} or as the raw body", "missing_file")
        return dest, n, {}
    raise Refused(415, f"unsupported content type {ctype!r}: use multipart/form-data, application/json or "
                       "application/octet-stream", "content_type")


async def inspect_upload(ctx: ServiceContext, dest: Path) -> Path:
    """Run the admission inspection; rename the file so that ingest recognises its kind. Returns the new path."""
    info = await run_in_threadpool(inspect_bundle, dest, ctx.settings.limits)
    final = dest.with_name(with_extension(dest.name, info.kind))
    if final != dest:
        dest.rename(final)
    return final


async def receive_upload(request: Request, ctx: ServiceContext, field: str, job_uuid: str, default_name: str,
                         ) -> tuple[Path, int, dict[str, Any]]:
    """:func:`receive_file` then :func:`inspect_upload`, holding one upload slot meanwhile.

    Returns the inspected file's path, its size and the other form fields. Raises :class:`Refused`
    (503 no slot, 413 too large, 422 missing, or the inspection's refusal); cleaning up
    ``uploads/<job_uuid>/`` on failure is the caller's.
    """
    ctx.acquire_upload_slot()
    try:
        dest, size, fields = await receive_file(request, ctx, field, job_uuid, default_name)
        return await inspect_upload(ctx, dest), size, fields
    finally:
        ctx.release_upload_slot()


def _no_constant(name: str) -> Any:
    """``NaN``/``Infinity`` are not JSON (RFC 8259) and no field of ours takes them."""
    raise ValueError(f"{name} is not a JSON number")


async def json_body(request: Request, model: type) -> Any:
    """Parse the JSON body into ``model``; 400 for invalid JSON, 422 with pydantic's errors for the rest."""
    raw = await request.body()
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nesting too deep
        raise Refused(400, f"invalid JSON body: {exc}", "bad_json") from None
    except ValueError as exc:
        raise Refused(422, f"invalid JSON body: {exc}", "bad_json") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise HTTPException(422, exc.errors(include_url=False, include_context=False, include_input=False)) from None


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _bool(v: Any, default: bool) -> bool:
    if v is None:
        return default
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise Refused(422, f"invalid boolean {v!r}", "bad_field")


def _job_id(v: Any) -> str | None:
    if v in (None, ""):
        return None
    if not isinstance(v, str) or not is_job_id(v):
        raise Refused(422, "job_id must be 1-256 characters of letters, digits and ._:@/- (starting with a letter or digit)",
                      "bad_field")
    return v


# -- probes --------------------------------------------------------------------------------------------


@router.get("/healthz", response_model=Health, tags=["probes"])
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


@router.get("/readyz", response_model=Health, tags=["probes"], responses={503: {"model": Health}})
def readyz(request: Request) -> Any:
    """Readiness: the store answers and a worker can take work (models loaded)."""
    ctx = ctx_of(request)
    checks = {"store": ctx.store.ping(), "workers": ctx.queue.ready(), "queued": ctx.queue.queued,
              "running": ctx.queue.running, "queue_max": ctx.settings.queue_max}
    ok = checks["store"] and checks["workers"]
    body = Health(status="ready" if ok else "not ready", checks=checks)
    return body if ok else JSONResponse(body.model_dump(), status_code=503)


@router.get("/metrics", tags=["probes"], response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus metrics (text exposition format)."""
    m = ctx_of(request).metrics
    return Response(m.render(), media_type=m.content_type)


# -- diagnoses -----------------------------------------------------------------------------------------

_DIAGNOSE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": {"type": "object", "required": ["bundle"], "properties": {
                "bundle": {"type": "string", "format": "binary",
                           "description": "Log bundle: .tar/.tar.gz/.zip archive, a .gz log or a log file."},
                "job_id": {"type": "string"}, "exclude": {"type": "array", "items": {"type": "string"}},
                "wait": {"type": "boolean"}}}},
            "application/json": {"schema": DiagnosePathBody.model_json_schema()},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}
_REFUSALS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed body"}, 403: {"description": "Path outside the allowed roots"},
    404: {"description": "Path not found"}, 413: {"description": "A limit was exceeded (size, members, bomb, line length)"},
    415: {"description": "Unsupported content type"}, 422: {"description": "Invalid or unsafe input"},
    429: {"description": "Rate limit"}, 503: {"description": "Queue full or too many uploads"},
}


@router.post("/v1/diagnoses", tags=["diagnoses"], openapi_extra=_DIAGNOSE_BODY, status_code=200,
             response_model=DiagnosisEnvelope, responses={202: {"model": Accepted}, **_REFUSALS})
async def create_diagnosis(
    request: Request, principal: Submit,
    job_id: Annotated[str | None, Query(max_length=256, description="Job id for the result (raw-body uploads).")] = None,
    filename: Annotated[str | None, Query(max_length=255, description="Original file name (raw-body uploads).")] = None,
    wait: Annotated[bool, Query(description="Wait for small bundles' results (default); false: 202 at once.")] = True,
) -> Any:
    """Diagnose a failed job's logs: upload a bundle (multipart field ``bundle``, or the raw body), or name a
    path under an allowed root (JSON). Small bundles are answered with the diagnosis (200); large ones,
    or ``wait=false``, with 202 and the id to poll."""
    ctx = ctx_of(request)
    if _content_type(request) == "application/json":
        body: DiagnosePathBody = await json_body(request, DiagnosePathBody)
        path = await run_in_threadpool(resolve_allowed, body.path, ctx.settings.allowed_roots)
        name = body.job_id or path.name
        job, fut = ctx.submit("diagnose", {**ctx.diagnose_task(path, name, body.exclude), "confined": str(path)},
                              job_id=name, caller=principal.name)
        return await _answer(ctx, job, fut, body.wait, 0)
    if not ctx.has_room():
        ctx.metrics.refusals.labels("queue_full").inc()
        raise Refused(503, f"the work queue is full ({ctx.settings.queue_max} jobs); retry later", "queue_full")
    job_uuid = new_id()
    try:
        final, size, fields = await receive_upload(request, ctx, "bundle", job_uuid, "bundle")
    except BaseException:
        shutil.rmtree(ctx.settings.uploads_dir / job_uuid, ignore_errors=True)
        raise
    name = _job_id(fields.get("job_id", job_id)) or job_id_from_name(fields.get("filename") or final.name)
    exclude = fields.get("exclude") or []
    try:
        job, fut = ctx.submit("diagnose", ctx.diagnose_task(final, name, exclude), job_id=name, job_uuid=job_uuid,
                              input_path=final.parent, input_bytes=size, caller=principal.name)
    except BaseException:  # refused, or the job could not be stored (a full disk): no upload is left behind
        shutil.rmtree(ctx.settings.uploads_dir / job_uuid, ignore_errors=True)
        raise
    return await _answer(ctx, job, fut, _bool(fields.get("wait"), wait), size)


async def _answer(ctx: ServiceContext, job: JobRecord, fut: Any, wait: bool, size: int) -> Any:
    if wait and size <= ctx.settings.sync_max_bytes:
        done = await ctx.wait(fut, ctx.settings.sync_wait_s)
        if done is not None:
            if done.status != "done":
                return failed_response(done)
            return envelope(ctx, done)
    return accepted(job)


def envelope(ctx: ServiceContext, job: JobRecord) -> DiagnosisEnvelope:
    _, d = ctx.diagnosis(job.id) if job.status == "done" else (job, None)
    fb = [FeedbackOut(**f.model_dump(exclude={"diagnosis_id"})) for f in ctx.store.feedback_for(job.id)]
    return DiagnosisEnvelope(**state(job), diagnosis=d, feedback=fb)


@router.get("/v1/diagnoses", response_model=DiagnosisList, tags=["diagnoses"])
def list_diagnoses(
    request: Request, _: Read,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    category: Annotated[str | None, Query(max_length=32)] = None,
    status: Annotated[str | None, Query(pattern="^(queued|running|done|failed)$")] = None,
) -> DiagnosisList:
    """Recent diagnoses, newest first."""
    rows = ctx_of(request).store.recent("diagnose", limit=limit, offset=offset, category=category, status=status)
    return DiagnosisList(items=[DiagnosisSummary(**r.model_dump(include=set(DiagnosisSummary.model_fields))) for r in rows],
                         limit=limit, offset=offset)


@router.get("/v1/diagnoses/{diagnosis_id}", response_model=DiagnosisEnvelope, tags=["diagnoses"],
            responses={404: {"description": "Unknown id"}})
def get_diagnosis(diagnosis_id: str, request: Request, _: Read) -> DiagnosisEnvelope:
    """A diagnosis: its state and, once done, the result; with the feedback it received."""
    ctx = ctx_of(request)
    return envelope(ctx, ctx.job(diagnosis_id, "diagnose"))


@router.post("/v1/diagnoses/{diagnosis_id}/feedback", response_model=FeedbackResult, tags=["diagnoses", "knowledge base"],
             responses={404: {"description": "Unknown id"}, 409: {"description": "Diagnosis not finished"}})
async def post_feedback(diagnosis_id: str, body: FeedbackBody, request: Request, principal: KBWrite) -> FeedbackResult:
    """Confirm or correct a diagnosis. The verdict is stored and taught to the knowledge base."""
    ctx = ctx_of(request)
    out = await run_in_threadpool(lambda: ctx.feedback(
        diagnosis_id, verdict=body.verdict, category=body.category, root_cause=body.root_cause, action=body.action,
        level=body.level, who=body.who or principal.name, source="api"))
    return FeedbackResult(feedback=FeedbackOut(**out.feedback.model_dump(exclude={"diagnosis_id"})),
                          kb_record_id=out.kb_record_id, kb_merged=out.kb_merged, kb_error=out.kb_error)


@router.get("/v1/jobs/{id}", response_model=JobEnvelope, tags=["jobs"], responses={404: {"description": "Unknown id"}})
def get_job(id: str, request: Request, _: Read) -> JobEnvelope:  # noqa: A002 - the path parameter's name
    """Any job (diagnosis, hang, slow, ETPR): state and result as JSON."""
    job = ctx_of(request).job(id)
    return JobEnvelope(**state(job), result=json.loads(job.result) if job.result else None)


# -- hang, slow, ETPR ----------------------------------------------------------------------------------

_HANG_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["dumps"], "properties": {
        "dumps": {"type": "string", "format": "binary", "description": "Archive of <snapshot>/rank-<R>.txt|.json folders."},
        "job_id": {"type": "string"}, "min_stuck_snapshots": {"type": "integer", "minimum": 2}}}},
    "application/json": {"schema": HangPathBody.model_json_schema()}}}}


@router.post("/v1/hang", response_model=HangEnvelope, tags=["analyzers"], openapi_extra=_HANG_BODY,
             responses={202: {"model": Accepted}, **_REFUSALS})
async def post_hang(request: Request, principal: Submit) -> Any:
    """Localise a hang from periodic stack dumps of every rank (an archive upload, or a folder under an
    allowed root). A hung job is also announced in the alert channel and webhooks (once per incident)."""
    ctx = ctx_of(request)
    if _content_type(request) == "application/json":
        body: HangPathBody = await json_body(request, HangPathBody)
        folder = await run_in_threadpool(resolve_allowed, body.path, ctx.settings.allowed_roots)
        task = {"kind": "hang", "dumps_dir": str(folder), "min_stuck_snapshots": body.min_stuck_snapshots,
                "confined": str(folder)}
        if body.logs is not None:
            task["logs"] = str(await run_in_threadpool(resolve_allowed, body.logs, ctx.settings.allowed_roots))
        job, fut = ctx.submit("hang", task, job_id=body.job_id or folder.name, caller=principal.name)
        return await _answer_report(ctx, job, fut, HangEnvelope, HangReport)
    job_uuid = new_id()
    ctx.acquire_upload_slot()
    try:
        dest, size, fields = await receive_file(request, ctx, "dumps", job_uuid, "dumps")
        folder = await run_in_threadpool(extract_bundle, dest, dest.parent / "unpacked", ctx.settings.limits)
        dest.unlink(missing_ok=True)
        try:
            min_stuck = int(fields.get("min_stuck_snapshots") or 3)
        except ValueError:
            raise Refused(422, "min_stuck_snapshots must be an integer", "bad_field") from None
        if not 2 <= min_stuck <= 1000:
            raise Refused(422, "min_stuck_snapshots must be within 2..1000", "bad_field")
        task = {"kind": "hang", "dumps_dir": str(folder), "min_stuck_snapshots": min_stuck}
        job, fut = ctx.submit("hang", task, job_id=_job_id(fields.get("job_id")) or job_uuid, job_uuid=job_uuid,
                              input_path=dest.parent, input_bytes=size, caller=principal.name)
    except BaseException:
        shutil.rmtree(ctx.settings.uploads_dir / job_uuid, ignore_errors=True)
        raise
    finally:
        ctx.release_upload_slot()
    return await _answer_report(ctx, job, fut, HangEnvelope, HangReport)


async def _answer_report(ctx: ServiceContext, job: JobRecord, fut: Any, env: type, model: type | None) -> Any:
    done = await ctx.wait(fut, ctx.settings.sync_wait_s)
    if done is None:
        return accepted(job)
    if done.status != "done":
        return failed_response(done)
    report = model.model_validate_json(done.result) if model is not None else json.loads(done.result or "null")
    return env(**state(done), report=report)


@router.post("/v1/slow", response_model=SlowEnvelope, tags=["analyzers"], responses={202: {"model": Accepted}, **_REFUSALS},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": SlowBody.model_json_schema()},
                 "multipart/form-data": {"schema": {"type": "object", "required": ["feed"], "properties": {
                     "feed": {"type": "string", "format": "binary", "description": "timing.jsonl/.csv/.parquet or a log file."},
                     "job_id": {"type": "string"}}}}}}})
async def post_slow(request: Request, principal: Submit) -> Any:
    """Batch fail-slow analysis of a whole feed: step records (JSON), an uploaded feed or log, or a path
    under an allowed root. A slow job is announced like a hang."""
    ctx = ctx_of(request)
    job_uuid = new_id()
    folder = ctx.settings.uploads_dir / job_uuid
    try:
        if _content_type(request) == "application/json":
            body: SlowBody = await json_body(request, SlowBody)
            if (body.records is None) == (body.path is None):
                raise Refused(422, "give exactly one of records or path", "bad_field")
            if body.path is not None:
                path = await run_in_threadpool(resolve_allowed, body.path, ctx.settings.allowed_roots)
                size, input_path = 0, None
            else:
                if not body.records:
                    raise Refused(422, "records is empty", "bad_field")
                folder.mkdir(parents=True)
                path = folder / "timing.jsonl"
                size = await run_in_threadpool(_write_jsonl, path, body.records)
                input_path = folder
            job_id = body.job_id
            world = body.world_size
        else:
            path, size, fields = await receive_upload(request, ctx, "feed", job_uuid, "timing.jsonl")
            input_path, job_id, world = folder, _job_id(fields.get("job_id")), None
        task = {"kind": "slow", "path": str(path), "world_size": world}
        if input_path is None:  # a path request: checked again when the worker opens it
            task["confined"] = str(path)
        job, fut = ctx.submit("slow", task, job_id=job_id or job_uuid,
                              job_uuid=job_uuid, input_path=input_path, input_bytes=size, caller=principal.name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return await _answer_report(ctx, job, fut, SlowEnvelope, SlowReport)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> int:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, allow_nan=False, default=str) + "\n")
    return path.stat().st_size


@router.post("/v1/slow/streams/{job_id}/steps", response_model=StepsResult, tags=["analyzers"])
async def post_steps(job_id: Annotated[str, PathParam(pattern=_JOB_ID_FIELD)], body: StepsBody, request: Request,
                     principal: Submit) -> StepsResult:
    """Stream step records of a running job into its live detector; returns the alarms this batch raised.
    Alarms are announced in the alert channel and webhooks (once per incident)."""
    ctx = ctx_of(request)
    alarms = await run_in_threadpool(ctx.streams.update, job_id, body.records, body.world_size)
    if alarms:
        ctx.alert_stream_alarms(job_id, alarms, caller=principal.name)
    return StepsResult(job_id=job_id, alarms=alarms, accepted=len(body.records))


@router.get("/v1/slow/streams/{job_id}", response_model=SlowReport, tags=["analyzers"],
            responses={404: {"description": "No live stream for this job"}})
async def get_stream_report(job_id: str, request: Request, _: Read) -> SlowReport:
    """The live detector's report for a streamed job."""
    rep = await run_in_threadpool(ctx_of(request).streams.report, job_id)
    if rep is None:
        raise HTTPException(404, f"no live step stream for job {job_id!r}")
    return rep


@router.get("/v1/nodes/offenders", response_model=OffenderList, tags=["recovery"])
async def get_offenders(request: Request, _: Read) -> OffenderList:
    """Repeat-offender nodes: each node named in the failures of the policy's ``history.lemon_node_faults`` distinct
    jobs or more within its ``history.window_days`` (a live job's incidents are counted once each, at their final
    diagnosis; an uploaded diagnosis once per plan), with those jobs. Read-only; empty without a recovery history."""
    ctx = ctx_of(request)
    items = await run_in_threadpool(ctx.offenders)
    h = ctx.policy.history
    return OffenderList(window_days=h.window_days, threshold=h.lemon_node_faults, items=items)


@router.post("/v1/etpr", response_model=EtprEnvelope, tags=["analyzers"], responses={202: {"model": Accepted}, **_REFUSALS},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": EtprBody.model_json_schema()},
                 "multipart/form-data": {"schema": {"type": "object", "required": ["events"], "properties": {
                     "events": {"type": "string", "format": "binary", "description": "events .jsonl/.csv/.parquet"}}}}}}})
async def post_etpr(request: Request, _: Submit) -> Any:
    """ETPR accounting of lifecycle events: how much allocated GPU time became training progress."""
    ctx = ctx_of(request)
    job_uuid = new_id()
    folder = ctx.settings.uploads_dir / job_uuid
    try:
        by, tol = "category", 0.05
        if _content_type(request) == "application/json":
            body: EtprBody = await json_body(request, EtprBody)
            folder.mkdir(parents=True)
            path = folder / "events.jsonl"
            size = await run_in_threadpool(_write_jsonl, path, body.events)
            by, tol = body.by, body.slow_tolerance
        else:
            path, size, _fields = await receive_upload(request, ctx, "events", job_uuid, "events.jsonl")
        task = {"kind": "etpr", "path": str(path), "by": by, "slow_tolerance": tol, "source": "api"}
        job, fut = ctx.submit("etpr", task, job_id=job_uuid, job_uuid=job_uuid, input_path=folder, input_bytes=size)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return await _answer_report(ctx, job, fut, EtprEnvelope, None)


# -- knowledge base ------------------------------------------------------------------------------------


@router.post("/v1/kb/search", tags=["knowledge base"])
async def kb_search(body: KBSearchBody, request: Request, _: Read) -> dict[str, Any]:
    """Past incidents most similar to some log text (``diag_service.kb.SearchResult``)."""
    from diag_service.kb import KBError

    ctx = ctx_of(request)
    try:
        res = await run_in_threadpool(lambda: ctx.kb().search(body.text, body.k))
    except (KBError, ValueError) as exc:
        raise Refused(422, f"cannot search: {exc}", "kb_input") from None
    return res.model_dump(mode="json")


@router.get("/v1/diagnoses/{diagnosis_id}/similar", tags=["knowledge base", "diagnoses"],
            responses={404: {"description": "Unknown id"}, 409: {"description": "Diagnosis not finished"},
                       503: {"description": "Knowledge base disabled or unavailable"}})
async def similar_to_diagnosis(diagnosis_id: str, request: Request, _: Read,
                               k: Annotated[int, Query(ge=1, le=50)] = 5) -> dict[str, Any]:
    """Past incidents most similar to a finished diagnosis's masked root-cause events
    (``diag_service.kb.SearchResult``: ``hits`` best first, ``is_novel``, ``threshold``, ``query_text``)."""
    from diag_service.kb import KBError

    ctx = ctx_of(request)
    job, d = ctx.diagnosis(diagnosis_id)
    if d is None:
        raise Conflict(f"diagnosis {diagnosis_id} is {job.status}; similar incidents need a finished diagnosis")
    kb = ctx.kb()  # 503 when the knowledge base is disabled
    try:
        res = await run_in_threadpool(kb.search_diagnosis, d, k)
    except (KBError, ValueError) as exc:
        raise Refused(422, f"cannot search: {exc}", "kb_input") from None
    return res.model_dump(mode="json")


@router.post("/v1/kb/incidents", tags=["knowledge base"], responses={404: {"description": "Unknown diagnosis"}})
async def kb_add(body: KBAddBody, request: Request, principal: KBWrite) -> dict[str, Any]:
    """Add a stored diagnosis to the knowledge base as a past incident (needs ``kb:write``)."""
    ctx = ctx_of(request)
    ctx.kb()  # 503 when the knowledge base is disabled
    verdict = "confirm" if body.category is None else "correct"
    out = await run_in_threadpool(lambda: ctx.feedback(
        body.diagnosis_id, verdict=verdict, category=body.category, root_cause=body.root_cause, action=body.action,
        level=body.level, who=principal.name, source="kb"))
    if out.kb_error is not None:
        raise Refused(422, f"the knowledge base did not take it: {out.kb_error}", "kb_input")
    return {"record_id": out.kb_record_id, "merged": out.kb_merged, "feedback_id": out.feedback.id}
