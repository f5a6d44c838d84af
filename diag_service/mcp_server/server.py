"""The MCP tools of ``diag mcp``: each one HTTP call to a running ``diag serve``, its JSON answer returned as is.

The server holds no logic of its own: every tool is one request to the service's API with the caller's token,
so the token's scopes (``read``, ``diagnose``) decide what an agent client may do, exactly as over HTTP. An
answer of the API that is not a success (4xx/5xx) becomes an MCP tool error carrying the API's own message
(``detail``) and status; an unreachable service is a tool error too, never a crash of the server.

| tool | API call | scope |
|---|---|---|
| ``diagnose_bundle`` | ``POST /v1/diagnoses`` (a local file or folder uploaded, or text) | ``diagnose`` |
| ``diagnosis_status`` | ``GET /v1/diagnoses/{id}`` (a diagnosis) or ``GET /v1/jobs/{id}`` (any job) | ``read`` |
| ``hang_analysis`` | ``POST /v1/hang`` (a local dumps folder uploaded) | ``diagnose`` |
| ``slow_analysis`` | ``POST /v1/slow`` (a local timing feed uploaded) | ``diagnose`` |
| ``live_job_status`` | ``GET /v1/live/jobs/{job_id}`` | ``read`` |
| ``live_job_etpr`` | ``GET /v1/live/jobs/{job_id}/etpr`` | ``read`` |
| ``similar_incidents`` | ``GET /v1/diagnoses/{id}/similar`` | ``read`` |
"""

from __future__ import annotations

import tarfile
import tempfile
import urllib.parse
from pathlib import Path
from typing import IO, Any, Literal

import httpx
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

#: In-memory part of a folder packed for upload; past it the archive spills to a temporary file.
SPOOL_BYTES = 64 << 20
#: Seconds one API call may take: the service answers small bundles synchronously within its ``sync_wait_s``
#: (30 s by default, docs/service.md) and large ones at once with 202, so a minute covers both plus the upload.
DEFAULT_TIMEOUT_S = 120.0


class ServiceAPI:
    """The ``diag serve`` API as the tools call it: ``base_url`` (``http://host:port``), a bearer ``token``
    (None: no ``Authorization`` header, for a service without tokens), ``timeout_s`` seconds per call.
    ``transport``: an httpx transport (tests); default the network."""

    def __init__(self, base_url: str, token: str | None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client_args: dict[str, Any] = {"base_url": self.base_url, "headers": headers, "timeout": timeout_s,
                                             "transport": transport}

    async def call(self, method: str, path: str, **kw: Any) -> Any:
        """One request; the JSON answer of a 2xx. Raises :class:`ToolError` with the API's message (its
        ``detail``, and ``reason`` when given) for any other status, or when the service cannot be reached."""
        try:
            async with httpx.AsyncClient(**self._client_args) as client:
                r = await client.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ToolError(f"cannot reach the diag service at {self.base_url}: {type(exc).__name__}: {exc}") from None
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.is_success:
            if body is None:
                raise ToolError(f"the diag service answered {r.status_code} without JSON")
            return body
        detail = body.get("detail") if isinstance(body, dict) else None
        reason = body.get("reason") if isinstance(body, dict) else None
        msg = detail if isinstance(detail, str) else (str(detail) if detail else r.text[:500] or r.reason_phrase)
        raise ToolError(f"the diag service refused ({r.status_code}{', ' + reason if reason else ''}): {msg}")


def _quoted(job_id: str) -> str:
    """A job id as a path segment of the live routes (``/`` kept: those routes take a path)."""
    return urllib.parse.quote(job_id, safe="/:@")


def _local(path: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise ToolError(f"no such file or folder on this machine: {path}")
    return p


def _pack(p: Path) -> tuple[str, IO[bytes]]:
    """A local file as it is, or a folder as a ``.tar.gz`` of its regular files (links and devices left out):
    ``(upload name, readable binary file)``. The caller closes the file."""
    if p.is_file():
        return p.name, open(p, "rb")  # noqa: SIM115 - closed by the caller after the upload
    buf = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed by the caller
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(p, arcname=p.name or "bundle", filter=lambda ti: ti if ti.isreg() or ti.isdir() else None)
    buf.seek(0)
    return f"{p.name or 'bundle'}.tar.gz", buf


def build_server(api: ServiceAPI) -> MCPServer:
    """The MCP server whose tools call ``api``; run it with ``.run("stdio")`` or connect a client in-process."""
    mcp = MCPServer("diag", log_level="WARNING", instructions=(
        "Diagnose failed, hung and slow large-model training jobs with a diag service: upload a job's logs "
        "(diagnose_bundle), stack dumps (hang_analysis) or a timing feed (slow_analysis); read a diagnosis or job "
        "by id (diagnosis_status), a live job watched by node agents (live_job_status, live_job_etpr), and past "
        "incidents like a diagnosis (similar_incidents). Results are the service's JSON; a queued job answers "
        "with status 'queued' and an id to poll with diagnosis_status."))

    @mcp.tool()
    async def diagnose_bundle(path: str | None = None, text: str | None = None, job_id: str | None = None,
                              wait: bool = True) -> dict[str, Any]:
        """Diagnose a failed training job's logs. Give exactly one of ``path`` (a log file, an archive such as
        .tar.gz/.zip, or a folder of logs on this machine; uploaded) or ``text`` (log text). Returns the
        service's DiagnosisEnvelope (status, id, and the diagnosis when done) or, for a large bundle or
        wait=false, status 'queued' and the id to poll with diagnosis_status."""
        if (path is None) == (text is None):
            raise ToolError("give exactly one of path or text")
        data: dict[str, str] = {"wait": "true" if wait else "false"}
        if job_id:
            data["job_id"] = job_id
        if text is not None:
            return await api.call("POST", "/v1/diagnoses", data=data,
                                  files={"bundle": ("bundle.log", text.encode("utf-8"), "text/plain")})
        name, fh = _pack(_local(path))  # type: ignore[arg-type]
        with fh:
            return await api.call("POST", "/v1/diagnoses", data=data, files={"bundle": (name, fh)})

    @mcp.tool()
    async def diagnosis_status(id: str) -> dict[str, Any]:  # noqa: A002 - the API's name for it
        """A diagnosis (or any job: hang, slow, ETPR) by the id the service gave: its status (queued, running,
        done, failed) and, once done, the result (the DiagnosisEnvelope of GET /v1/diagnoses/{id}, else the
        JobEnvelope of GET /v1/jobs/{id})."""
        seg = urllib.parse.quote(id, safe="")
        job = await api.call("GET", f"/v1/jobs/{seg}")
        if job.get("kind") == "diagnose":
            return await api.call("GET", f"/v1/diagnoses/{seg}")
        return job

    @mcp.tool()
    async def hang_analysis(dumps: str, job_id: str | None = None, min_stuck_snapshots: int = 3) -> dict[str, Any]:
        """Localise a hang from periodic stack dumps of every rank: ``dumps`` is a folder on this machine
        (``<snapshot>/rank-<R>.txt|.json``, as py-spy or faulthandler wrote them) or an archive of one. Returns the
        service's HangEnvelope (the HangReport: stuck ranks, suspects, explanation)."""
        data = {"min_stuck_snapshots": str(min_stuck_snapshots)}
        if job_id:
            data["job_id"] = job_id
        name, fh = _pack(_local(dumps))
        with fh:
            return await api.call("POST", "/v1/hang", data=data, files={"dumps": (name, fh)})

    @mcp.tool()
    async def slow_analysis(feed: str, job_id: str | None = None) -> dict[str, Any]:
        """Fail-slow analysis of a timing feed on this machine (timing.jsonl / .csv / .parquet of per-rank step
        records, or a training log with step lines). Returns the service's SlowEnvelope (the SlowReport:
        slowdown episodes, straggler ranks and nodes)."""
        p = _local(feed)
        if not p.is_file():
            raise ToolError(f"{feed} is a folder; give the timing feed file")
        data = {"job_id": job_id} if job_id else {}
        with open(p, "rb") as fh:
            return await api.call("POST", "/v1/slow", data=data, files={"feed": (p.name, fh)})

    @mcp.tool()
    async def live_job_status(job_id: str) -> dict[str, Any]:
        """A job watched live by node agents (diag watch): status (running, failed, hung, slow, finished), agents,
        detection and diagnosis times, whether the latest diagnosis is provisional, and its id (read it with
        diagnosis_status)."""
        return await api.call("GET", f"/v1/live/jobs/{_quoted(job_id)}")

    @mcp.tool()
    async def live_job_etpr(job_id: str, by: Literal["category", "failure_mode", "node", "week", "cause"] = "category"
                            ) -> dict[str, Any]:
        """The ETPR ledger of a live job so far (effective training productivity: how much allocated GPU time
        became training progress, and the losses by ``by``), from its agents' lifecycle events."""
        return await api.call("GET", f"/v1/live/jobs/{_quoted(job_id)}/etpr", params={"by": by})

    @mcp.tool()
    async def similar_incidents(diagnosis_id: str, k: int = 5) -> dict[str, Any]:
        """Past incidents most similar to a finished diagnosis (the service's knowledge base): ``hits`` best
        first (each a past incident with its root cause and fix, and a score), and ``is_novel`` when none is
        close."""
        return await api.call("GET", f"/v1/diagnoses/{urllib.parse.quote(diagnosis_id, safe='')}/similar",
                              params={"k": k})

    return mcp
