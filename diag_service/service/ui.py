"""Server-rendered pages (Jinja2, no build step, no JavaScript needed): an index of recent diagnoses and one
page per diagnosis for the on-call engineer, with the feedback buttons.

The view functions here only arrange the shared models for display (time order, labels, offsets).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from diag_service.domain import Category, Diagnosis, EventRole, RecoveryLevel
from diag_service.service.auth import COOKIE, Principal
from diag_service.service.context import Conflict, NotFound, ServiceContext

router = APIRouter(prefix="/ui", include_in_schema=False)

_env = Environment(loader=FileSystemLoader(Path(__file__).with_name("templates")),
                   autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)

_ROLE_LABEL = {EventRole.ROOT: "root cause", EventRole.SYMPTOM: "cascade", EventRole.SUMMARY: "launcher summary",
               EventRole.CONTEXT: "context"}


def fmt_time(t: float | str | None) -> str:
    """Unix seconds or ISO-8601 → ``YYYY-MM-DD HH:MM:SS UTC`` (milliseconds kept when the log had them)."""
    if t is None:
        return "—"
    if isinstance(t, int | float):
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    try:
        v = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return t
    v = v.astimezone(dt.UTC) if v.tzinfo else v
    frac = f".{v.microsecond // 1000:03d}" if v.microsecond else ""
    return v.strftime("%Y-%m-%d %H:%M:%S") + frac + " UTC"


def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        v = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (v if v.tzinfo else v.replace(tzinfo=dt.UTC)).timestamp()


@dataclass
class TimelineRow:
    time: str
    offset: str
    role: str
    role_class: str
    where: str
    count: str
    text: str
    file_line: str


def timeline(d: Diagnosis, limit: int = 30) -> list[TimelineRow]:
    """The first failure and its cascade: root-cause events first, then symptoms and launcher summaries in
    time order (context events, such as warnings, are left out).

    ``offset`` is the time since the earliest root-cause event that has a time (else the earliest event).
    """
    events = [e for e in d.events if e.role != EventRole.CONTEXT]
    roots = [e for e in events if e.role == EventRole.ROOT]
    rest = [e for e in events if e.role != EventRole.ROOT]
    by_time = lambda e: (_epoch(e.first_timestamp) is None, _epoch(e.first_timestamp) or 0.0)  # noqa: E731
    ordered = sorted(roots, key=by_time) + sorted(rest, key=by_time)
    times = [t for t in (_epoch(e.first_timestamp) for e in roots) if t is not None] or \
            [t for t in (_epoch(e.first_timestamp) for e in events) if t is not None]
    t0 = min(times) if times else None
    rows = []
    for e in ordered[:limit]:
        t = _epoch(e.first_timestamp)
        off = "" if t is None or t0 is None else f"{t - t0:+.3f} s"
        ranks = f"{e.n_ranks} rank{'s' if e.n_ranks != 1 else ''}" if e.n_ranks else ""
        where = ", ".join(x for x in (f"rank {e.first.rank}" if e.first.rank is not None else "", e.first.node or "") if x)
        rows.append(TimelineRow(
            time=fmt_time(e.first_timestamp) if e.first_timestamp else "time not in log", offset=off,
            role=_ROLE_LABEL.get(e.role, e.role.value), role_class=e.role.value, where=where or "—",
            count=", ".join(x for x in (ranks, f"{e.count}×" if e.count > 1 else "") if x), text=e.first.text[:600],
            file_line=f"{e.first.file}:{e.first.line}"))
    return rows


def _principal(request: Request, scope: str) -> Principal | None:
    """The caller if allowed; None when it must log in first. 403 when its token lacks the scope."""
    ctx: ServiceContext = request.app.state.ctx
    try:
        return ctx.auth.check(request, scope)
    except HTTPException as exc:
        if exc.status_code == 401:
            return None
        raise


def _login_redirect(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/ui/login?next={quote(request.url.path)}", status_code=303)


def _render(name: str, status: int = 200, **kw: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**kw), status_code=status)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, category: Annotated[str | None, Query(max_length=32)] = None,
          offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> Response:
    """Recent diagnoses, newest first, 50 a page."""
    if _principal(request, "read") is None:
        return _login_redirect(request)
    ctx: ServiceContext = request.app.state.ctx
    cat = category if category in {c.value for c in Category} else None
    rows = ctx.store.recent("diagnose", limit=50, offset=offset, category=cat)
    return _render("index.html", rows=rows, fmt_time=fmt_time, category=cat, categories=[c.value for c in Category],
                   offset=offset, queued=ctx.queue.queued, running=ctx.queue.running)


@router.get("/diagnoses/{diagnosis_id}", response_class=HTMLResponse)
def diagnosis_page(diagnosis_id: str, request: Request, fb: Annotated[str | None, Query(max_length=16)] = None) -> Response:
    """One diagnosis for the on-call engineer."""
    if _principal(request, "read") is None:
        return _login_redirect(request)
    ctx: ServiceContext = request.app.state.ctx
    try:
        job, d = ctx.diagnosis(diagnosis_id)
    except NotFound:
        return _render("error.html", 404, title="Not found", message=f"No diagnosis with id {diagnosis_id}.")
    feedback = ctx.store.feedback_for(job.id)
    return _render("diagnosis.html", job=job, d=d, timeline=timeline(d) if d else [], fmt_time=fmt_time,
                   feedback=feedback, categories=[c.value for c in Category], levels=[lv.value for lv in RecoveryLevel],
                   flash=fb, refresh=job.status in ("queued", "running"), pct=_pct)


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%" if math.isfinite(x) else "—"


@router.post("/diagnoses/{diagnosis_id}/feedback")
async def feedback_form(
    diagnosis_id: str, request: Request,
    verdict: Annotated[str, Form(pattern="^(confirm|correct)$")],
    category: Annotated[str | None, Form(max_length=32)] = None,
    root_cause: Annotated[str | None, Form(max_length=4000)] = None,
    action: Annotated[str | None, Form(max_length=2000)] = None,
    level: Annotated[str | None, Form(max_length=4)] = None,
) -> Response:
    """The page's Confirm / Correct buttons (needs ``kb:write``)."""
    principal = _principal(request, "kb:write")
    if principal is None:
        return _login_redirect(request)
    ctx: ServiceContext = request.app.state.ctx
    try:
        cat = Category(category) if category else None
        lvl = RecoveryLevel(level) if level else None
    except ValueError:
        return _render("error.html", 422, title="Invalid feedback", message="Unknown category or recovery level.")
    try:
        await run_in_threadpool(lambda: ctx.feedback(diagnosis_id, verdict=verdict, category=cat, root_cause=root_cause or None,
                                                     action=action or None, level=lvl, who=principal.name, source="ui"))
    except NotFound:
        return _render("error.html", 404, title="Not found", message=f"No diagnosis with id {diagnosis_id}.")
    except Conflict as exc:
        return _render("error.html", 409, title="Not finished", message=str(exc))
    return RedirectResponse(f"/ui/diagnoses/{diagnosis_id}?fb={verdict}", status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_page(next: Annotated[str, Query(max_length=512)] = "/ui/") -> HTMLResponse:  # noqa: A002
    return _render("login.html", next=next if next.startswith("/ui/") else "/ui/", error=None)


@router.post("/login")
def login(request: Request, token: Annotated[str, Form(max_length=512)],
          next: Annotated[str, Form(max_length=512)] = "/ui/") -> Response:  # noqa: A002
    """Check a bearer token and keep it in an HttpOnly, SameSite=Strict cookie for the pages."""
    ctx: ServiceContext = request.app.state.ctx
    target = next if next.startswith("/ui/") and "//" not in next else "/ui/"
    try:
        principal = ctx.auth.authenticate(request, token)
    except HTTPException as exc:  # too many failed attempts from this address
        page = _render("login.html", exc.status_code, next=target, error=str(exc.detail))
        page.headers.update(exc.headers or {})
        return page
    if principal is None:
        return _render("login.html", 401, next=target, error="Unknown token.")
    resp = RedirectResponse(target, status_code=303)
    resp.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https", max_age=12 * 3600)
    return resp
