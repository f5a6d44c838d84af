"""``diag mcp``: the MCP tools are calls to a running ``diag serve`` (a real uvicorn server on 127.0.0.1), reached
through the ``mcp`` package's own client: in process (``Client(server)``) and over stdio (``diag mcp`` as a
subprocess). Each tool answers with the API's JSON; the token's scopes apply; API errors are tool errors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from test_service_support import ADMIN, EXAMPLE, HANG, READER, SLOW_FEED, LiveServer, build_small_kb, service_settings, wait_until

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from diag_service.mcp_server.server import ServiceAPI, build_server  # noqa: E402
from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
AGENT = "agent-token-0123456789abcdef"
T0 = 1_795_945_000.0
TOOLS = {"diagnose_bundle", "diagnosis_status", "hang_analysis", "slow_analysis", "live_job_status", "live_job_etpr",
         "similar_incidents"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("mcp")
    build_small_kb(tmp / "kb")
    settings = service_settings(tmp, kb_enabled=True, kb_home=tmp / "kb", kb_embedder="hashing",
                                live={"debounce_s": 0.05, "settle_s": 0.3, "heartbeat_s": 5})
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with LiveServer(settings) as s:
        yield s


def call(server_url: str, token: str | None, tool: str, args: dict[str, Any]) -> Any:
    """One tool call through the mcp package's in-process client; the CallToolResult."""

    async def main() -> Any:
        async with Client(build_server(ServiceAPI(server_url, token))) as client:
            return await client.call_tool(tool, args)

    return anyio.run(main)


def settled(server_url: str, result: Any) -> dict[str, Any]:
    """A tool's answer once its job is done: a queued job (202) is polled with the diagnosis_status tool."""
    assert not result.is_error, text_of(result)
    body = result.structured_content
    if body["status"] in ("queued", "running"):
        body = wait_until(lambda: (b := call(server_url, ADMIN, "diagnosis_status", {"id": body["id"]}).structured_content)
                          ["status"] in ("done", "failed") and b, timeout=300, step=0.5)
    return body


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_tools_are_listed_with_their_schemas(srv: LiveServer) -> None:
    async def main() -> Any:
        async with Client(build_server(ServiceAPI(srv.url, ADMIN))) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(main)}
    assert set(tools) == TOOLS
    assert set(tools["diagnose_bundle"].input_schema["properties"]) == {"path", "text", "job_id", "wait"}
    assert tools["live_job_etpr"].input_schema["properties"]["by"]["enum"] == ["category", "failure_mode", "node", "week",
                                                                             "cause"]


def test_diagnose_a_folder_and_text_then_read_it_back_as_the_api_does(srv: LiveServer) -> None:
    env = settled(srv.url, call(srv.url, ADMIN, "diagnose_bundle", {"path": str(EXAMPLE), "job_id": "mcp-job-1"}))
    assert env["status"] == "done" and env["job_id"] == "mcp-job-1"
    assert env["diagnosis"]["category"] == "user_code" and env["diagnosis"]["failure_mode"] == "fail_stop"
    # the same JSON as the API's own answer for that id (the tool returns it as is)
    st = call(srv.url, ADMIN, "diagnosis_status", {"id": env["id"]})
    assert st.structured_content == srv.client.get(f"/v1/diagnoses/{env['id']}").json()
    assert json.loads(text_of(st)) == st.structured_content  # the text content carries the same JSON
    # log text instead of a file: one node's console, diagnosed as the pipeline diagnoses that file
    text = (EXAMPLE / "console_node1.log").read_text()
    r2 = settled(srv.url, call(srv.url, ADMIN, "diagnose_bundle", {"text": text, "job_id": "mcp-job-text"}))
    local = diagnose(DiagnoseRequest(path=str(EXAMPLE / "console_node1.log"), recovery=False))
    got = r2["diagnosis"]
    assert (got["category"], got["failure_mode"], got["first_failing_rank"]) == (
        local.category.value, local.failure_mode.value, local.first_failing_rank)
    # similar past incidents of that diagnosis, as GET /v1/diagnoses/{id}/similar answers
    sim = call(srv.url, ADMIN, "similar_incidents", {"diagnosis_id": env["id"], "k": 3})
    assert not sim.is_error, text_of(sim)
    assert sim.structured_content == srv.client.get(f"/v1/diagnoses/{env['id']}/similar", params={"k": 3}).json()
    assert 1 <= len(sim.structured_content["hits"]) <= 3


def test_hang_and_slow_analysis_upload_local_files(srv: LiveServer) -> None:
    # (a loaded machine may answer 202 past the service's sync_wait_s: then the job is polled by id)
    h = settled(srv.url, call(srv.url, ADMIN, "hang_analysis", {"dumps": str(HANG), "job_id": "mcp-hang"}))
    assert h["status"] == "done" and h.get("report", h.get("result"))["hung"] is True
    s = settled(srv.url, call(srv.url, ADMIN, "slow_analysis", {"feed": str(SLOW_FEED), "job_id": "mcp-slow"}))
    assert s["status"] == "done" and s.get("report", s.get("result"))["failure_mode"] == "fail_slow"


def _agent_post(srv: LiveServer, job: str, node: str, seq: int, **parts: Any) -> None:
    body = {"agent_id": f"{node}:1", "node": node, "seq": seq, "sent": T0, **parts}
    r = httpx.post(f"{srv.url}/v1/live/jobs/{job}/batches", json=body, headers={"Authorization": f"Bearer {AGENT}"})
    assert r.status_code == 200, r.text


def test_live_job_status_and_etpr_are_the_api_answers(srv: LiveServer) -> None:
    job = "mcp-live-1"
    text = (FIX / "lab_sigkill_root_cause_wrong" / "console_node0.log").read_text()
    _agent_post(srv, job, "node0", 0, events=[{"event": "started", "time": T0}])
    _agent_post(srv, job, "node0", 1, logs=[{"path": "console_node0.log", "offset": 0, "text": text}],
                events=[{"event": "failure", "time": T0 + 60, "exitcode": 1},
                        {"event": "finished", "time": T0 + 61, "status": "failed"}])
    api_view = wait_until(lambda: (v := srv.client.get(f"/v1/live/jobs/{job}").json())["provisional"] is False
                          and not v["diagnosis_pending"] and v, timeout=120)
    r = call(srv.url, READER, "live_job_status", {"job_id": job})  # read scope is enough
    assert not r.is_error, text_of(r)
    view = r.structured_content
    assert view == srv.client.get(f"/v1/live/jobs/{job}").json()
    assert view["status"] == "failed" and view["diagnosis_id"] == api_view["diagnosis_id"]
    e = call(srv.url, READER, "live_job_etpr", {"job_id": job, "by": "failure_mode"})
    assert not e.is_error, text_of(e)
    api_etpr = srv.client.get(f"/v1/live/jobs/{job}/etpr", params={"by": "failure_mode"}).json()
    assert {k: v for k, v in e.structured_content.items() if k != "timings_s"} == {
        k: v for k, v in api_etpr.items() if k != "timings_s"}  # (each report times its own computation)
    # the live diagnosis itself, through the status tool
    d = call(srv.url, READER, "diagnosis_status", {"id": view["diagnosis_id"]})
    assert d.structured_content["diagnosis"]["job_id"] == job


def test_a_read_only_token_cannot_submit_and_errors_carry_the_api_message(srv: LiveServer) -> None:
    r = call(srv.url, READER, "diagnose_bundle", {"path": str(EXAMPLE)})
    assert r.is_error and "403" in text_of(r) and "lacks the 'diagnose' scope" in text_of(r)
    h = call(srv.url, READER, "hang_analysis", {"dumps": str(HANG)})
    assert h.is_error and "lacks the 'diagnose' scope" in text_of(h)
    # nothing was queued for the reader: no diagnosis of that job exists
    assert all(i["job_id"] != "torchrun_shape_mismatch_2x2" or i["status"] == "done"
               for i in srv.client.get("/v1/diagnoses").json()["items"])
    bad = call(srv.url, None, "live_job_status", {"job_id": "mcp-live-1"})  # no token at all
    assert bad.is_error and "401" in text_of(bad)
    missing = call(srv.url, ADMIN, "live_job_status", {"job_id": "no-such-job"})
    assert missing.is_error and "no live job 'no-such-job'" in text_of(missing)
    unknown = call(srv.url, ADMIN, "diagnosis_status", {"id": "0" * 32})
    assert unknown.is_error and "404" in text_of(unknown)
    both = call(srv.url, ADMIN, "diagnose_bundle", {})
    assert both.is_error and "exactly one of path or text" in text_of(both)
    gone = call(srv.url, ADMIN, "diagnose_bundle", {"path": "/nonexistent/logs"})
    assert gone.is_error and "no such file or folder" in text_of(gone)


def test_an_unreachable_service_is_a_tool_error() -> None:
    with __import__("socket").socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    r = call(url, ADMIN, "live_job_status", {"job_id": "j"})
    assert r.is_error and "cannot reach the diag service" in text_of(r)


def test_diag_mcp_over_stdio(srv: LiveServer) -> None:
    # the command an agent client launches: `diag mcp --service URL`, token from DIAG_TOKEN
    done = srv.diagnose((EXAMPLE / "console_node0.log").read_bytes(), name="console_node0.log", job_id="mcp-stdio")
    assert done.status_code == 200, done.text[:300]
    env = {**os.environ, "DIAG_TOKEN": READER, "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "diag_service.cli", "mcp", "--service", srv.url],
                                   env=env, cwd=str(REPO))

    async def main() -> tuple[set[str], Any, Any]:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            ok = await client.call_tool("diagnosis_status", {"id": done.json()["id"]})
            refused = await client.call_tool("diagnose_bundle", {"text": "RuntimeError: boom\n"})
            return names, ok, refused

    names, ok, refused = anyio.run(main)
    assert names == TOOLS
    assert not ok.is_error and ok.structured_content == srv.client.get(f"/v1/diagnoses/{done.json()['id']}").json()
    assert refused.is_error and "lacks the 'diagnose' scope" in text_of(refused)
