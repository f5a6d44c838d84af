"""The HTTP service end to end: a real server on 127.0.0.1, talked to with httpx.

Upload → diagnosis (sync and 202), path requests under the allowed root, hang / slow / ETPR, the
knowledge base and feedback, auth scopes and rate limits, probes, metrics, OpenAPI and the pages.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_service_support import (
    ADMIN,
    EXAMPLE,
    HANG,
    READER,
    SLOW_FEED,
    SUBMITTER,
    FakeSlack,
    LiveServer,
    build_small_kb,
    service_settings,
    tar_gz,
    wait_until,
)

from diag_service.domain import Diagnosis


@pytest.fixture(scope="module")
def hooks() -> Iterator[FakeSlack]:
    with FakeSlack("unused") as fake:
        yield fake


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, hooks: FakeSlack) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("svc")
    roots = tmp / "roots"
    (roots / "jobs").mkdir(parents=True)
    os.symlink(EXAMPLE, roots / "jobs" / "job-77")  # a link inside the root to a folder elsewhere: refused
    import shutil

    shutil.copytree(EXAMPLE, roots / "jobs" / "job-7")
    (roots / "jobs" / "empty.jsonl").write_text("")
    (tmp / "outside").mkdir()
    os.symlink(tmp / "outside", roots / "jobs" / "escape")
    build_small_kb(tmp / "kb")
    settings = service_settings(
        tmp, allowed_roots=[roots], sync_max_bytes=64 << 10, kb_enabled=True, kb_home=tmp / "kb", kb_embedder="hashing",
        webhooks=[{"url": f"{hooks.url}/hooks/slack", "format": "slack"},
                  {"url": f"{hooks.url}/hooks/mattermost", "format": "mattermost"},
                  {"url": f"{hooks.url}/hooks/lark", "format": "lark"}],
        public_url="http://diag.example.test",
    )
    with LiveServer(settings) as s:
        s.roots = roots  # type: ignore[attr-defined]
        s.tmp = tmp  # type: ignore[attr-defined]
        yield s


@pytest.fixture(scope="module")
def diagnosed(srv: LiveServer) -> dict[str, Any]:
    """One small bundle diagnosed through the upload path (answered synchronously)."""
    r = srv.diagnose(tar_gz(EXAMPLE), job_id="job-42")
    assert r.status_code == 200, r.text[:500]
    return r.json()


def test_small_upload_is_answered_with_the_diagnosis(diagnosed: dict[str, Any], srv: LiveServer) -> None:
    assert diagnosed["status"] == "done" and diagnosed["job_id"] == "job-42"
    d = Diagnosis.model_validate(diagnosed["diagnosis"])
    assert d.category.value == "user_code" and d.failure_mode.value == "fail_stop"
    assert d.first_failing_rank == 3
    ev = d.root_cause.evidence[0]
    assert "shapes cannot be multiplied" in ev.text and ev.rank == 3 and ev.node == "node1"
    assert d.recovery is not None and d.recovery.level.value == "L4"
    # no platform configured: the plan is the one the logs show (two torchrun agents, no scheduler), not kubectl
    assert d.recovery.platform == "torchrun" and not any("kubectl" in c for c in d.recovery.commands)
    assert d.similar_incidents, "the knowledge base was consulted"
    # stored: the same answer by id, and in the list
    again = srv.client.get(diagnosed["links"]["self"]).json()
    assert again["diagnosis"] == diagnosed["diagnosis"]
    listed = srv.client.get("/v1/diagnoses", params={"category": "user_code"}).json()["items"]
    assert any(i["id"] == diagnosed["id"] and i["summary"].startswith("Tensor shape") for i in listed)
    # the upload itself is removed once the diagnosis is stored
    assert not (srv.settings.uploads_dir / diagnosed["id"]).exists()


def test_raw_body_upload_and_large_bundle_gets_202_then_result(srv: LiveServer) -> None:
    data = tar_gz(EXAMPLE)
    r = srv.client.post("/v1/diagnoses", params={"job_id": "raw-1", "filename": "logs.tgz"}, content=data,
                        headers={"Content-Type": "application/gzip"})
    assert r.status_code == 200 and r.json()["diagnosis"]["category"] == "user_code"
    # past sync_max_bytes (64 KiB here): 202, a Location, and the result once polled
    big = tar_gz(EXAMPLE, extra={"job/padding.log": base64.b64encode(os.urandom(96 << 10))})
    r = srv.diagnose(big, job_id="big-1")
    assert r.status_code == 202, r.text[:500]
    body = r.json()
    assert r.headers["location"] == body["links"]["self"] and body["status"] in ("queued", "running", "done")
    done = srv.wait_done(body["id"])
    assert done["status"] == "done" and done["result"]["category"] == "user_code"
    # wait=false: 202 even for a small bundle
    r = srv.diagnose(data, job_id="nowait", wait="false")
    assert r.status_code == 202


def test_path_requests_stay_under_the_allowed_root(srv: LiveServer) -> None:
    r = srv.client.post("/v1/diagnoses", json={"path": "jobs/job-7"})
    assert r.status_code == 200, r.text[:500]
    assert r.json()["job_id"] == "job-7" and r.json()["diagnosis"]["first_failing_rank"] == 3
    for path, code in [("/etc", 403), ("jobs/../../outside", 403), ("jobs/escape", 403), ("jobs/job-77", 403),
                       ("jobs/nope", 404), (str(EXAMPLE), 403)]:
        r = srv.client.post("/v1/diagnoses", json={"path": path})
        assert r.status_code == code, (path, r.text)
        assert r.json()["detail"]
    r = srv.client.post("/v1/diagnoses", json={"path": "jobs/job-7", "unknown": 1})
    assert r.status_code == 422


def test_failed_diagnosis_is_a_4xx_with_the_reason(srv: LiveServer) -> None:
    r = srv.diagnose(b"\x00\x01\x02binary" * 100, name="core.bin")
    assert r.status_code == 422
    assert "no readable log lines" in r.json()["detail"]
    assert srv.client.get("/healthz").status_code == 200


def test_auth_scopes(srv: LiveServer) -> None:
    anon = httpx.Client(base_url=srv.url)
    assert anon.get("/v1/diagnoses").status_code == 401
    assert anon.get("/v1/diagnoses").headers["www-authenticate"] == "Bearer"
    assert anon.get("/v1/diagnoses", headers={"Authorization": "Bearer wrong-token-0000000000"}).status_code == 401
    reader = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {READER}"})
    assert reader.get("/v1/diagnoses").status_code == 200
    r = reader.post("/v1/diagnoses", json={"path": "jobs/job-7"})
    assert r.status_code == 403 and "'diagnose'" in r.json()["detail"]
    submitter = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {SUBMITTER}"})
    first = srv.client.get("/v1/diagnoses").json()["items"][0]["id"]
    r = submitter.post(f"/v1/diagnoses/{first}/feedback", json={"verdict": "confirm"})
    assert r.status_code == 403 and "kb:write" in r.json()["detail"]
    # probes stay open; tokens never show in the API's own description
    assert anon.get("/healthz").status_code == 200 and anon.get("/metrics").status_code == 200
    assert ADMIN not in anon.get("/openapi.json").text


def test_rate_limit_per_token(tmp_path: Path) -> None:
    with LiveServer(service_settings(tmp_path, rate_per_minute=60, rate_burst=3)) as s:
        codes = [s.client.get("/v1/diagnoses").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[-1] == 429
        r = s.client.get("/v1/diagnoses")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert r.json()["reason"] == "rate_limit"  # a refusal like any other: reason and metric
        assert 'diag_refusals_total{reason="rate_limit"}' in s.client.get("/metrics").text
        # another token has its own bucket
        other = httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {READER}"})
        assert other.get("/v1/diagnoses").status_code == 200


def test_feedback_confirm_and_correct_teach_the_knowledge_base(srv: LiveServer, diagnosed: dict[str, Any]) -> None:
    did = diagnosed["id"]
    r = srv.client.post(f"/v1/diagnoses/{did}/feedback", json={"verdict": "confirm"})
    assert r.status_code == 200, r.text[:500]
    out = r.json()
    assert out["feedback"]["verdict"] == "confirmed" and out["kb_record_id"] and out["kb_error"] is None
    r = srv.client.post(f"/v1/diagnoses/{did}/feedback", json={
        "verdict": "correct", "category": "config", "root_cause": "model config changed hidden size",
        "action": "revert the config change", "level": "L4"})
    assert r.status_code == 200 and r.json()["feedback"]["verdict"] == "corrected"
    env = srv.client.get(f"/v1/diagnoses/{did}").json()
    assert [f["verdict"] for f in env["feedback"]] == ["confirmed", "corrected"]
    assert env["feedback"][0]["who"] == "admin"
    # the knowledge base now knows it
    hits = srv.client.post("/v1/kb/search", json={"text": diagnosed["diagnosis"]["root_cause"]["evidence"][0]["text"], "k": 3})
    assert hits.status_code == 200 and hits.json()["hits"]
    assert any(h["record"]["id"] == out["kb_record_id"] for h in hits.json()["hits"])
    # bad feedback
    assert srv.client.post(f"/v1/diagnoses/{did}/feedback", json={"verdict": "maybe"}).status_code == 422
    assert srv.client.post("/v1/diagnoses/0123/feedback", json={"verdict": "confirm"}).status_code == 404
    assert srv.client.post("/v1/kb/search", json={"text": "", "k": 3}).status_code == 422
    r = srv.client.post("/v1/kb/incidents", json={"diagnosis_id": did, "category": "data", "action": "fix the shard"})
    assert r.status_code == 200 and r.json()["record_id"]


def test_hang_dumps_upload_and_one_alert_per_incident(srv: LiveServer, hooks: FakeSlack) -> None:
    data = tar_gz(HANG, arcname="dumps")
    r = srv.client.post("/v1/hang", files={"dumps": ("dumps.tar.gz", data)}, data={"job_id": "hung-1"})
    assert r.status_code == 200, r.text[:500]
    rep = r.json()["report"]
    assert rep["hung"] is True and [s["rank"] for s in rep["suspects"]][:1] == [2]
    wait_until(lambda: hooks.posted("hooks/slack") and hooks.posted("hooks/mattermost") and hooks.posted("hooks/lark"))
    slack = hooks.posted("hooks/slack")
    assert len(slack) == 1 and "hung-1" in slack[0]["text"] and slack[0]["blocks"][0]["type"] == "header"
    mm = hooks.posted("hooks/mattermost")[0]
    assert mm["attachments"][0]["title"].startswith("Job hung-1") and mm["attachments"][0]["fields"]
    lark = hooks.posted("hooks/lark")[0]
    assert lark["msg_type"] == "interactive" and "hung-1" in lark["card"]["header"]["title"]["content"]
    # the same incident again: no second message
    r = srv.client.post("/v1/hang", files={"dumps": ("dumps.tar.gz", data)}, data={"job_id": "hung-1"})
    assert r.status_code == 200
    assert wait_until(lambda: srv.ctx.store.alert_count("hang:admin:hung-1") == 2)  # keyed by the caller (the admin token)
    assert len(hooks.posted("hooks/slack")) == 1
    # a path under the root works as well; a folder without dumps is a clear 422
    (srv.roots / "dumps-empty").mkdir()  # type: ignore[attr-defined]
    r = srv.client.post("/v1/hang", json={"path": "dumps-empty"})
    assert r.status_code == 422 and r.json()["detail"]


def test_one_snapshot_with_the_jobs_logs_places_the_hang(srv: LiveServer) -> None:
    """A new user's trial 41, r10: one py-spy round of every rank, then the job died (gloo's timeout); POST /v1/hang
    said "Not enough snapshots (1) ... take 2 more" and had no way to take the logs, which show the hang."""
    import shutil

    run = Path(__file__).parent / "fixtures" / "trial41" / "r10"
    shutil.copytree(run, srv.roots / "t41-r10")  # type: ignore[attr-defined]
    alone = srv.client.post("/v1/hang", json={"path": "t41-r10/dumps", "job_id": "t41-r10-alone"})
    assert alone.status_code == 200 and alone.json()["report"]["undecided"] is True
    r = srv.client.post("/v1/hang", json={"path": "t41-r10/dumps", "logs": "t41-r10", "job_id": "t41-r10"})
    assert r.status_code == 200, r.text[:500]
    rep = r.json()["report"]
    assert rep["hung"] is True and rep["suspects"][0]["rank"] == 1, rep["explanation"]
    # the logs' path is held to the allowed roots like the dumps'
    r = srv.client.post("/v1/hang", json={"path": "t41-r10/dumps", "logs": "/etc"})
    assert r.status_code in (403, 404, 422), r.text[:300]


def test_slow_batch_and_live_stream(srv: LiveServer, hooks: FakeSlack) -> None:
    records = [json.loads(line) for line in SLOW_FEED.read_text().splitlines()]
    r = srv.client.post("/v1/slow", json={"records": records, "job_id": "slow-batch"})
    assert r.status_code == 200, r.text[:500]
    rep = r.json()["report"]
    assert rep["failure_mode"] == "fail_slow" and rep["stragglers"][0]["rank"] == 0
    wait_until(lambda: any("slow-batch" in p["text"] for p in hooks.posted("hooks/slack")))
    # live: step by step; alarms come back as the steps complete
    alarms: list[dict[str, Any]] = []
    steps = sorted({rec["step"] for rec in records})
    for s in steps:
        batch = [rec for rec in records if rec["step"] == s]
        r = srv.client.post("/v1/slow/streams/live-1/steps", json={"records": batch, "world_size": 2})
        assert r.status_code == 200, r.text[:500]
        alarms += r.json()["alarms"]
    assert alarms and alarms[0]["step"] >= 69
    live = srv.client.get("/v1/slow/streams/live-1").json()
    assert live["failure_mode"] == "fail_slow"
    wait_until(lambda: any("live-1" in p["text"] for p in hooks.posted("hooks/slack")))
    assert sum("live-1" in p["text"] for p in hooks.posted("hooks/slack")) == 1
    # bad input
    assert srv.client.get("/v1/slow/streams/never").status_code == 404
    assert srv.client.post("/v1/slow", json={"records": [], "path": "x"}).status_code == 422
    r = srv.client.post("/v1/slow", json={"path": "jobs/empty.jsonl"})  # nothing to analyse: as the CLI says
    assert r.status_code == 422 and "no usable step records" in r.text, r.text[:300]
    r = srv.client.post("/v1/slow", files={"feed": ("empty.jsonl", b"")})
    assert r.status_code == 422 and "empty.jsonl" in r.json()["detail"]
    assert "uploads" not in r.json()["detail"]  # the server's own folders stay out of the answer
    r = srv.client.post("/v1/slow/streams/live-2/steps", json={"records": [{"rank": "x"}]})
    assert r.status_code == 200 and r.json()["alarms"] == []


def test_etpr_from_events(srv: LiveServer) -> None:
    events = [
        {"job": "j1", "event": "submitted", "time": 1700000000, "gpus": 8},
        {"job": "j1", "event": "allocated", "time": 1700000100},
        {"job": "j1", "event": "started", "time": 1700000160},
        {"job": "j1", "event": "first_step", "time": 1700000460},
        {"job": "j1", "event": "checkpoint_saved", "time": 1700001460, "step": 100, "duration": 60},
        {"job": "j1", "event": "finished", "time": 1700003460, "status": "succeeded"},
    ]
    r = srv.client.post("/v1/etpr", json={"events": events})
    assert r.status_code == 200, r.text[:500]
    rep = r.json()["report"]
    assert rep["cluster"]["allocated_gpu_s"] > 0 and 0 < rep["cluster"]["etpr"] < 1
    assert srv.client.post("/v1/etpr", json={"events": []}).status_code == 422
    r = srv.client.post("/v1/etpr", json={"events": [{"job": "j", "event": "nonsense", "time": "x"}]})
    assert r.status_code in (200, 422)


def test_probes_metrics_and_openapi(srv: LiveServer, diagnosed: dict[str, Any]) -> None:
    assert srv.client.get("/healthz").json()["status"] == "ok"
    ready = srv.client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["checks"]["store"] is True
    text = srv.client.get("/metrics").text
    assert re.search(r'diag_diagnoses_total\{category="user_code",failure_mode="fail_stop"\} [1-9]', text)
    assert 'diag_stage_duration_seconds_bucket{le="0.005",stage="extract"}' in text
    assert "diag_queue_depth 0.0" in text
    assert re.search(r'diag_http_request_duration_seconds_count\{method="POST",route="/v1/diagnoses",status="200"\} [1-9]', text)
    spec = srv.client.get("/openapi.json").json()
    body = spec["paths"]["/v1/diagnoses"]["post"]["requestBody"]["content"]
    assert {"multipart/form-data", "application/json", "application/octet-stream"} <= set(body)
    assert "/v1/diagnoses/{diagnosis_id}/feedback" in spec["paths"] and "/v1/hang" in spec["paths"]
    assert srv.client.get("/docs").status_code == 200


def test_pages_index_diagnosis_login_and_feedback_form(srv: LiveServer, diagnosed: dict[str, Any]) -> None:
    did = diagnosed["id"]
    page = srv.client.get(f"/ui/diagnoses/{did}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    for needle in ("user_code", "Root cause", "Recommended action", "Timeline: first failure and cascade",
                   "shapes cannot be multiplied", "console_node1.log:18", "incidents</h2>", "Confirm diagnosis"):
        assert needle in html, needle
    assert "<script" not in html  # no build step, no JavaScript
    index = srv.client.get("/ui/").text
    assert f"/ui/diagnoses/{did}" in index and "job-42" in index
    assert srv.client.get("/ui/diagnoses/nope").status_code == 404
    # a browser without a token is sent to the login page; a good token sets an HttpOnly cookie
    browser = httpx.Client(base_url=srv.url, follow_redirects=False)
    r = browser.get(f"/ui/diagnoses/{did}")
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login")
    assert browser.post("/ui/login", data={"token": "wrong", "next": "/ui/"}).status_code == 401
    r = browser.post("/ui/login", data={"token": ADMIN, "next": f"/ui/diagnoses/{did}"})
    assert r.status_code == 303 and "httponly" in r.headers["set-cookie"].lower()
    assert "samesite=strict" in r.headers["set-cookie"].lower()
    assert browser.get(f"/ui/diagnoses/{did}").status_code == 200
    # the page's Confirm button
    r = browser.post(f"/ui/diagnoses/{did}/feedback", data={"verdict": "confirm"})
    assert r.status_code == 303 and r.headers["location"].endswith("?fb=confirm")
    assert "Thank you: your confirmation was recorded" in browser.get(r.headers["location"]).text
    assert browser.post(f"/ui/diagnoses/{did}/feedback", data={"verdict": "correct", "category": "bogus"}).status_code == 422
    # an open redirect is not possible through next=
    r = browser.post("/ui/login", data={"token": ADMIN, "next": "//evil.example/"})
    assert r.headers["location"] == "/ui/"


def test_queued_page_refreshes_and_failed_page_says_why(srv: LiveServer) -> None:
    r = srv.diagnose(b"\x00\x00\x00" * 10, name="empty.bin", wait="false")
    assert r.status_code == 202
    job = srv.wait_done(r.json()["id"])
    assert job["status"] == "failed" and job["error_status"] == 422
    html = srv.client.get(f"/ui/diagnoses/{job['id']}").text
    assert "failed" in html and "no readable log lines" in html


def test_settings_from_file_and_environment(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from diag_service.service import load_settings

    cfg = tmp_path / "s.yaml"
    cfg.write_text("workers: 3\nlimits: {max_members: 10}\nslack: {alert_channel: C1}\n")
    env = {"DIAG_TOKENS": json.dumps([{"name": "ci", "token": "t" * 20, "scopes": ["read"]}]),
           "DIAG_ALLOWED_ROOTS": f"{tmp_path}{os.pathsep}/nonexistent", "DIAG_SLACK_SIGNING_SECRET": "s" * 32,
           "DIAG_WORKERS": "5"}
    s = load_settings(cfg, env=env, data_dir=tmp_path / "d")
    assert s.workers == 5 and s.limits.max_members == 10 and s.slack.alert_channel == "C1"
    assert s.allowed_roots[0] == tmp_path.resolve() and s.auth_required and s.data_dir == tmp_path / "d"
    assert "t" * 20 not in repr(s) and "s" * 32 not in repr(s) and not s.slack.enabled
    with pytest.raises(ValidationError, match="unknown scope"):
        load_settings(env={"DIAG_TOKENS": json.dumps([{"name": "x", "token": "t" * 20, "scopes": ["admin"]}])})
    with pytest.raises(ValidationError, match="at least 16"):
        load_settings(env={"DIAG_TOKENS": json.dumps([{"name": "x", "token": "short"}])})
    with pytest.raises(ValueError, match="DIAG_TOKENS"):
        load_settings(env={"DIAG_TOKENS": "not json"})
    cfg.write_text("- a list\n")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_settings(cfg, env={})
    cfg.write_text("nonsense_key: 1\n")
    with pytest.raises(ValidationError, match="nonsense_key"):
        load_settings(cfg, env={})
