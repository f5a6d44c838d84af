"""``create_app(settings)``: the FastAPI application of ``diag serve`` (API, pages, probes, and the Slack bot)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from diag_service import __version__
from diag_service.errors import DiagError, http_status
from diag_service.recovery.recommend import Executor
from diag_service.service import api, live, ui
from diag_service.service.context import Conflict, NotFound, ServiceContext
from diag_service.service.faults import DiskFull, disk_full_message, is_disk_full
from diag_service.service.middleware import EdgeMiddleware, LimitsMiddleware, SecurityHeadersMiddleware
from diag_service.service.settings import Settings, load_settings
from diag_service.service.store import StoreError
from diag_service.service.uploads import Refused

log = logging.getLogger("diag_service.service")

_UPLOAD_PATHS = ("/v1/diagnoses", "/v1/hang", "/v1/slow", "/v1/etpr")

DESCRIPTION = """Diagnosis of failed, hung and slow large-model training jobs.

Submit a failed job's logs to `POST /v1/diagnoses` (multipart field `bundle`, a raw body, or a JSON
`{"path": ...}` under an allowed root); small bundles are answered with the diagnosis, large ones
with `202` and an id to poll. Stack dumps go to `POST /v1/hang`, step timings to `POST /v1/slow`
(batch) or `POST /v1/slow/streams/{job_id}/steps` (live), lifecycle events to `POST /v1/etpr`.
Authentication: `Authorization: Bearer <token>` with scopes `read`, `diagnose`, `kb:write`.
"""


#: ``reason`` of refusals raised as HTTP exceptions (auth, rate limit, routing).
_HTTP_REASONS = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
                 429: "rate_limit"}


def create_app(settings: Settings | None = None, executor: Executor | None = None) -> FastAPI:
    """Build the application. Workers start (and unfinished jobs resume) when the app starts serving.

    ``settings``: default :func:`~diag_service.service.settings.load_settings` (``DIAG_*`` variables).
    ``executor``: what executes live incidents' recovery plans (default: ``DIAG_EXECUTOR``'s; see
    :class:`~diag_service.service.context.ServiceContext`).
    Raises :class:`~diag_service.service.store.StoreError` when the database cannot be opened.
    """
    settings = settings or load_settings()
    ctx = ServiceContext(settings, executor)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(ctx.start)
        try:
            yield
        finally:
            app.state.live.close()
            await run_in_threadpool(ctx.stop)

    app = FastAPI(title="diag-service", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    app.state.ctx = ctx

    def body_limit(path: str) -> int:
        if path in _UPLOAD_PATHS:
            return settings.limits.max_upload_bytes
        if path.startswith("/slack/"):
            return 1 << 20
        return settings.max_json_bytes

    # outermost last: security headers on every answer; then the body limits (before anything is read);
    # then the client address, Host and cross-site checks (their refusals have the headers too)
    app.add_middleware(EdgeMiddleware, metrics=ctx.metrics, allowed_hosts=settings.trusted_hosts,
                       allowed_origins=settings.trusted_origins, trusted_proxies=settings.trusted_proxies)
    app.add_middleware(LimitsMiddleware, metrics=ctx.metrics, body_limit=body_limit,
                       read_timeout_s=settings.body_read_timeout_s, request_timeout_s=settings.request_timeout_s)
    app.add_middleware(SecurityHeadersMiddleware)

    @app.exception_handler(Refused)
    async def _refused(_req: Request, exc: Refused) -> JSONResponse:
        ctx.metrics.refusals.labels(exc.reason).inc()
        headers = {"Retry-After": "5"} if exc.status == 503 else None
        return JSONResponse({"detail": exc.message, "reason": exc.reason}, status_code=exc.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_refused(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        # authentication (401), scope (403), rate limit (429) and routing refusals: the same JSON and metric
        # as every other refusal
        reason = _HTTP_REASONS.get(exc.status_code, f"http_{exc.status_code}")
        ctx.metrics.refusals.labels(reason).inc()
        return JSONResponse({"detail": exc.detail, "reason": reason}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_req: Request, exc: RequestValidationError) -> JSONResponse:
        # pydantic's errors without the input they quote: a NaN there made the answer itself fail (a plain-text
        # 500), and a secret in the body would be sent back
        errors = [{k: e[k] for k in ("type", "loc", "msg") if k in e} for e in exc.errors()]
        ctx.metrics.refusals.labels("invalid").inc()
        return JSONResponse({"detail": jsonable_encoder(errors), "reason": "invalid"}, status_code=422)

    @app.exception_handler(RecursionError)
    async def _too_deep(_req: Request, _exc: RecursionError) -> JSONResponse:
        # a JSON body nested deeper than the parser's recursion limit
        ctx.metrics.refusals.labels("bad_json").inc()
        return JSONResponse({"detail": "invalid JSON body: nested too deeply", "reason": "bad_json"}, status_code=400)

    @app.exception_handler(NotFound)
    async def _not_found(_req: Request, exc: NotFound) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(Conflict)
    async def _conflict(_req: Request, exc: Conflict) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(DiagError)
    async def _diag_error(_req: Request, exc: DiagError) -> JSONResponse:
        # every other deliberate error: the status of its kind (diag_service.errors)
        status = http_status(exc)
        headers = {"Retry-After": "5"} if status == 503 else None
        return JSONResponse({"detail": str(exc), "kind": exc.kind.value}, status_code=status, headers=headers)

    def _disk_full(detail: str, exc: BaseException) -> JSONResponse:
        log.error("disk full: %s (%s)", detail, exc)
        ctx.metrics.refusals.labels(DiskFull.reason).inc()
        return JSONResponse({"detail": detail, "reason": DiskFull.reason, "kind": DiskFull.kind.value}, status_code=507)

    @app.exception_handler(DiskFull)
    async def _disk_full_error(_req: Request, exc: DiskFull) -> JSONResponse:
        return _disk_full(str(exc), exc)

    @app.exception_handler(StoreError)
    async def _store(_req: Request, exc: StoreError) -> JSONResponse:
        if is_disk_full(exc):
            return _disk_full(disk_full_message("the request"), exc)
        log.error("store unavailable: %s", exc)
        return JSONResponse({"detail": "the store is unavailable; retry later"}, status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(OSError)
    async def _os_error(_req: Request, exc: OSError) -> JSONResponse:
        # a file the service writes or reads failed: a full disk is the client's to know (507); anything
        # else is ours, logged with its traceback, and answered in the same JSON shape
        if is_disk_full(exc):
            return _disk_full(disk_full_message("the request's data"), exc)
        log.error("unexpected OS error", exc_info=exc)
        return JSONResponse({"detail": "internal error (logged by the service)", "kind": "internal"}, status_code=500)

    app.include_router(api.router)
    app.include_router(ui.router)
    live.install(app, ctx)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    if settings.slack.enabled:
        from diag_service.bot.app import mount

        mount(app, ctx)
    return app
