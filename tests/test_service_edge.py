"""The HTTP edge of ``diag serve`` (issue 19, finding 8): what a request must be before a route sees it.

In-process (FastAPI's TestClient, no network): a foreign ``Host`` (DNS rebinding) is refused; a
cross-site form post or ``text/plain`` upload from another web page is refused; ``X-Forwarded-For``
counts only from configured proxies; wrong tokens are rate-limited per address; every answer has
the security headers; and ``diag serve`` will not bind a network address without tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from test_service_support import ADMIN, READER, service_settings

from diag_service.service import create_app

LOG = b"[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: CUDA error: an illegal memory access\n"
BASE = "http://127.0.0.1:8080"


def _app(tmp: Path, **kw: Any) -> FastAPI:
    return create_app(service_settings(tmp, **kw))


@pytest.fixture()
def open_app(tmp_path: Path) -> Iterator[FastAPI]:
    """No tokens (the loopback default), a public URL, one extra allowed origin."""
    app = _app(tmp_path, tokens=[], public_url="https://diag.example.com",
               allowed_origins=["https://grafana.example.com"])
    yield app
    app.state.ctx.store.close()


def _jobs(app: FastAPI) -> int:
    return app.state.ctx.store.count()


# -- Host --------------------------------------------------------------------------------------------------


def test_a_foreign_host_name_is_refused(open_app: FastAPI) -> None:
    c = TestClient(open_app, base_url=BASE)
    assert c.get("/v1/diagnoses").status_code == 200
    for host in ("localhost:8080", "[::1]:8080", "127.0.0.1", "diag.example.com", "LOCALHOST."):
        assert c.get("/v1/diagnoses", headers={"Host": host}).status_code == 200, host
    # a page of attacker.example whose name now resolves to 127.0.0.1 (DNS rebinding)
    for host in ("attacker.example:8080", "attacker.example", "127.0.0.1.attacker.example", ""):
        r = c.get("/v1/diagnoses", headers={"Host": host})
        assert r.status_code == 400 and r.json()["reason"] == "host", host
        assert "allowed_hosts" in r.json()["detail"]
    r = c.post("/v1/diagnoses", content=LOG, headers={"Host": "attacker.example", "Content-Type": "application/octet-stream"})
    assert r.status_code == 400 and _jobs(open_app) == 0
    # probes and metrics answer orchestrators that address the pod by its IP
    assert c.get("/healthz", headers={"Host": "10.1.2.3:8080"}).status_code == 200
    assert 'diag_refusals_total{reason="host"}' in c.get("/metrics").text


def test_allowed_hosts_wildcards(tmp_path: Path) -> None:
    app = _app(tmp_path, tokens=[], allowed_hosts=["*.corp.example", "diag01"])
    c = TestClient(app, base_url=BASE)
    assert c.get("/healthz", headers={"Host": "x"}).status_code == 200
    assert c.get("/v1/diagnoses", headers={"Host": "diag.corp.example:8443"}).status_code == 200
    assert c.get("/v1/diagnoses", headers={"Host": "diag01"}).status_code == 200
    assert c.get("/v1/diagnoses", headers={"Host": "corp.example"}).status_code == 400
    assert c.get("/v1/diagnoses", headers={"Host": "localhost"}).status_code == 400, "the default list was replaced"


# -- cross-site writes -------------------------------------------------------------------------------------


def test_cross_site_upload_and_form_post_are_refused(open_app: FastAPI) -> None:
    c = TestClient(open_app, base_url=BASE)
    # what <form enctype="text/plain"> or fetch(..., {mode: "no-cors"}) on another site sends
    evil = {"Origin": "http://attacker.example", "Content-Type": "text/plain"}
    r = c.post("/v1/diagnoses", params={"wait": "false", "filename": "x.log"}, content=LOG, headers=evil)
    assert r.status_code == 403 and r.json()["reason"] == "cross_site" and "attacker.example" in r.json()["detail"]
    r = c.post("/v1/diagnoses", files={"bundle": ("x.log", LOG)}, data={"wait": "false"},
               headers={"Origin": "https://attacker.example"})
    assert r.status_code == 403
    r = c.post("/ui/diagnoses/0123/feedback", data={"verdict": "confirm"}, headers={"Origin": "null"})
    assert r.status_code == 403, "a sandboxed frame or data: page"
    # a browser that sends no Origin on a form post still says where the request comes from
    r = c.post("/v1/diagnoses", content=LOG, headers={"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"})
    assert r.status_code == 403
    assert c.post("/v1/diagnoses", content=LOG, headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
    assert _jobs(open_app) == 0 and not any(open_app.state.ctx.settings.uploads_dir.iterdir())
    # the service's own pages (same host and port), public_url's origin, allowed_origins, and programs pass
    ok = [{"Origin": BASE, "Sec-Fetch-Site": "same-origin"}, {"Origin": "https://diag.example.com"},
          {"Origin": "https://grafana.example.com:443"}, {"Sec-Fetch-Site": "none"}, {}]
    for headers in ok:
        r = c.post("/v1/diagnoses", params={"wait": "false", "filename": "x.log"}, content=LOG,
                   headers={**headers, "Content-Type": "text/plain"})
        assert r.status_code == 202, (headers, r.text)
    assert _jobs(open_app) == len(ok)
    # reading is not a write: a cross-site GET is answered (the browser keeps the answer from the page)
    assert c.get("/v1/diagnoses", headers={"Origin": "http://attacker.example"}).status_code == 200


# -- client address ----------------------------------------------------------------------------------------


def test_forwarded_for_counts_only_from_trusted_proxies(tmp_path: Path) -> None:
    app = _app(tmp_path, tokens=[], rate_per_minute=1, rate_burst=2, trusted_proxies=["10.0.0.0/8"])
    # a client that is not a proxy: rotating X-Forwarded-For does not give it fresh allowances
    direct = TestClient(app, base_url=BASE, client=("192.0.2.7", 5000))
    codes = [direct.get("/v1/diagnoses", headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code for i in range(4)]
    assert codes == [200, 200, 429, 429]
    # behind the proxy each client has its own allowance; the proxy's own right-most hop is skipped and a
    # hop the client wrote itself (left of the one the proxy added) is ignored
    proxy = TestClient(app, base_url=BASE, client=("10.0.0.2", 5000))
    hops = ["203.0.113.1", "203.0.113.1, 10.0.0.9", "forged, 203.0.113.1"]
    assert [proxy.get("/v1/diagnoses", headers={"X-Forwarded-For": h}).status_code for h in hops] == [200, 200, 429]
    assert proxy.get("/v1/diagnoses", headers={"X-Forwarded-For": "203.0.113.2"}).status_code == 200


# -- failed authentication ---------------------------------------------------------------------------------


def test_failed_authentications_are_rate_limited_per_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(tmp_path, auth_failures_max=3, auth_failures_window_s=60)
    guesser = TestClient(app, base_url=BASE, client=("192.0.2.7", 5000))
    codes = [guesser.get("/v1/diagnoses", headers={"Authorization": f"Bearer guess-{i:020d}"}).status_code
             for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    # locked out: even the right token is not looked at, so a right guess cannot be told apart
    r = guesser.get("/v1/diagnoses", headers={"Authorization": f"Bearer {READER}"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    assert guesser.get("/v1/diagnoses").status_code == 401, "no token is not a guess"
    # other addresses are not affected
    other = TestClient(app, base_url=BASE, client=("192.0.2.8", 5000))
    assert other.get("/v1/diagnoses", headers={"Authorization": f"Bearer {READER}"}).status_code == 200
    # the login form counts too
    browser = TestClient(app, base_url=BASE, client=("192.0.2.9", 5000), follow_redirects=False)
    codes = [browser.post("/ui/login", data={"token": f"wrong-{i}", "next": "/ui/"}).status_code for i in range(4)]
    assert codes == [401, 401, 401, 429]
    assert browser.post("/ui/login", data={"token": ADMIN, "next": "/ui/"}).status_code == 429
    # a full window later the allowance is back
    import diag_service.service.auth as auth

    now = auth.time.monotonic()
    monkeypatch.setattr(auth.time, "monotonic", lambda: now + 61)
    assert guesser.get("/v1/diagnoses", headers={"Authorization": f"Bearer {READER}"}).status_code == 200
    assert browser.post("/ui/login", data={"token": ADMIN, "next": "/ui/"}).status_code == 303


# -- security headers --------------------------------------------------------------------------------------


def test_security_headers_on_pages_and_api(open_app: FastAPI) -> None:
    c = TestClient(open_app, base_url=BASE)
    for path, code in [("/ui/login", 200), ("/ui/", 200), ("/v1/diagnoses", 200), ("/healthz", 200), ("/nope", 404),
                       ("/docs", 200)]:
        r = c.get(path)
        assert r.status_code == code, path
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, path
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["x-frame-options"] == "DENY"
    # the pages may use their own inline styles and post their forms here, and run no script
    page = c.get("/ui/login").headers["content-security-policy"]
    assert "style-src 'unsafe-inline'" in page and "form-action 'self'" in page and "script-src" not in page
    assert "cdn.jsdelivr.net" in c.get("/docs").headers["content-security-policy"]
    # refusals by the edge carry them too
    r = c.post("/v1/diagnoses", content=LOG, headers={"Origin": "http://attacker.example"})
    assert r.status_code == 403 and "frame-ancestors 'none'" in r.headers["content-security-policy"]


# -- diag serve --------------------------------------------------------------------------------------------


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``uvicorn.run`` replaced by a recorder of its arguments; no DIAG_* variables from the environment."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    for var in ("DIAG_TOKENS", "DIAG_ALLOWED_HOSTS", "DIAG_PUBLIC_URL"):
        monkeypatch.delenv(var, raising=False)
    return calls


def test_serve_refuses_a_network_address_without_tokens(tmp_path: Path, served: list[dict[str, Any]],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from typer.testing import CliRunner

    from diag_service.cli import app
    from diag_service.service.cli import serve

    for host in ("0.0.0.0", "10.1.2.3", "::", "diag01.corp.example"):
        # raised as a ConfigError, turned into exit 3 and one line by the one CLI handler
        res = CliRunner().invoke(app, ["serve", "--host", host, "--data-dir", str(tmp_path / "d")])
        assert res.exit_code == 3, (host, res.output)
        assert "configuration error: refused to serve:" in res.output and "no tokens are configured" in res.output
    assert not served and not (tmp_path / "d").exists(), "refused before anything was created"
    serve(host="127.0.0.1", data_dir=tmp_path / "d")  # loopback without tokens: this machine only
    serve(host="0.0.0.0", data_dir=tmp_path / "d", allow_no_auth=True)  # behind an authenticating proxy
    assert [c["host"] for c in served] == ["127.0.0.1", "0.0.0.0"]
    assert "--allow-no-auth" in capsys.readouterr().err
    # forwarded headers are never believed from uvicorn's default of any loopback peer
    assert all(c["proxy_headers"] is False for c in served)
    for c in served:
        c["app"].state.ctx.store.close()


def test_serve_with_tokens_binds_the_network_and_serves_its_own_address(
        tmp_path: Path, served: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from diag_service.service.cli import serve

    monkeypatch.setenv("DIAG_TOKENS", json.dumps([{"name": "ci", "token": READER, "scopes": ["read"]}]))
    serve(host="10.1.2.3", data_dir=tmp_path / "d")
    app = served[-1]["app"]
    c = TestClient(app, base_url="http://10.1.2.3:8080", headers={"Authorization": f"Bearer {READER}"})
    assert c.get("/v1/diagnoses").status_code == 200
    assert c.get("/v1/diagnoses", headers={"Host": "attacker.example"}).status_code == 400
    app.state.ctx.store.close()
    serve(host="0.0.0.0", data_dir=tmp_path / "d")
    served[-1]["app"].state.ctx.store.close()


def test_a_json_body_nested_too_deep_is_a_bad_request_not_a_server_error(open_app: FastAPI) -> None:
    c = TestClient(open_app, base_url=BASE, raise_server_exceptions=False)
    deep = b'{"path": ' + b"[" * 100_000 + b"}"
    for route in ("/v1/diagnoses", "/v1/hang", "/v1/slow", "/v1/etpr"):
        r = c.post(route, content=deep, headers={"Content-Type": "application/json"})
        assert (r.status_code, r.json()["reason"]) == (400, "bad_json"), route
        assert "invalid JSON body" in r.json()["detail"]
    assert _jobs(open_app) == 0
