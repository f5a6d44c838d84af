"""Helpers for the service and bot tests: a real server on 127.0.0.1, a fake Slack Web API and webhook
receiver on 127.0.0.1, and bundles. Everything binds to loopback on a free port and stops by itself."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from diag_service.service import Settings, create_app

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
HANG = REPO / "tests" / "fixtures" / "hang" / "sleep_before_allreduce"
SLOW_FEED = REPO / "tests" / "fixtures" / "slow" / "lab_slow_rank_compute" / "timing.jsonl"
ADMIN = "admin-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"
SUBMITTER = "submit-token-0123456789abcdef"


def tar_gz(folder: Path, arcname: str = "job", extra: dict[str, bytes] | None = None) -> bytes:
    """A .tar.gz of ``folder`` (as ``arcname/``), plus ``extra`` members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(folder, arcname=arcname)
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def wait_until(pred: Callable[[], Any], timeout: float = 30.0, step: float = 0.05) -> Any:
    """Poll ``pred`` until it returns something truthy (returned) or ``timeout`` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def service_settings(tmp: Path, **kw: Any) -> Settings:
    """Settings for an in-process test server: thread workers, a small hashing-embedder knowledge base."""
    base: dict[str, Any] = {"data_dir": tmp / "data", "worker_mode": "thread", "workers": 2, "kb_enabled": False, "llm": False,
                            "rate_per_minute": 60_000, "rate_burst": 1000,
                            "tokens": [{"name": "admin", "token": ADMIN, "scopes": ["read", "diagnose", "kb:write"]},
                                       {"name": "reader", "token": READER, "scopes": ["read"]},
                                       {"name": "submitter", "token": SUBMITTER, "scopes": ["read", "diagnose"]}]}
    base.update(kw)
    return Settings.model_validate(base)


#: The agent token of :func:`live_client` (a token with the ``agent`` scope).
AGENT = "agent-token-0123456789abcdef"


@contextlib.contextmanager
def live_client(tmp: Path, **kw: Any) -> Iterator[Any]:
    """An in-process service (a ``TestClient`` authorised as admin, ``data_dir`` set on it) whose settings
    are :func:`service_settings` ``(tmp, **kw)`` plus a ``node-agents`` token :data:`AGENT` for the live API."""
    from fastapi.testclient import TestClient

    from diag_service.service import create_app

    settings = service_settings(tmp, **kw)
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        c.data_dir = settings.data_dir  # type: ignore[attr-defined]
        yield c




def build_small_kb(home: Path, n: int = 12) -> None:
    """A knowledge base of the first ``n`` seed incidents, embedded with the deterministic hashing embedder."""
    from diag_service.kb import HashingEmbedder, KBConfig, KnowledgeBase, load_records

    kb = KnowledgeBase(KBConfig(home=home), HashingEmbedder())
    kb.build(records=load_records()[:n])


class LiveServer:
    """``create_app(settings)`` served by uvicorn in a thread on 127.0.0.1 (free port)."""

    def __init__(self, settings: Settings, token: str | None = ADMIN) -> None:
        self.settings = settings
        self.app = create_app(settings)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP proto: asyncio sets TCP_NODELAY
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=60)

    @property
    def ctx(self) -> Any:
        return self.app.state.ctx

    def __enter__(self) -> LiveServer:
        self.thread.start()
        wait_until(self._ready, timeout=120, step=0.1)
        return self

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)

    def diagnose(self, data: bytes, name: str = "job.tar.gz", **fields: str) -> httpx.Response:
        return self.client.post("/v1/diagnoses", files={"bundle": (name, data)}, data=fields)

    def wait_done(self, id_: str, timeout: float = 60) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            body = self.client.get(f"/v1/jobs/{id_}").json()
            return body if body["status"] in ("done", "failed") else None

        return wait_until(done, timeout=timeout, step=0.1)


class FakeSlack:
    """A fake Slack Web API (``/api/<method>``), file host (``/files/<name>``), response URLs
    (``/response/<id>``) and webhook receiver (``/hooks/<name>``) on 127.0.0.1. Records every call."""

    def __init__(self, bot_token: str) -> None:
        self.bot_token = bot_token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.files: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self._ts = 1000
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _reply(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                name = self.path.rsplit("/", 1)[-1]
                if not self.path.startswith("/files/") or name not in outer.files:
                    self._reply(404, b"{}")
                    return
                if self.headers.get("Authorization") != f"Bearer {outer.bot_token}":
                    self._reply(403, b"{}")
                    return
                outer.record("files.download", {"name": name})
                self._reply(200, outer.files[name], "application/octet-stream")

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                ctype = self.headers.get("Content-Type", "")
                if "json" in ctype:
                    params = json.loads(raw or b"{}")
                else:
                    params = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
                    for k in ("blocks", "view"):
                        if isinstance(params.get(k), str):
                            params[k] = json.loads(params[k])
                path = self.path
                if path.startswith("/api/"):
                    method = path[len("/api/"):]
                    outer.record(method, params)
                    self._reply(200, json.dumps(outer.answer(method, params)).encode())
                else:
                    outer.record(path.strip("/"), params)
                    self._reply(200, b"ok", "text/plain")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def record(self, method: str, params: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append((method, params))

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._ts += 1
            ts = f"1700000000.{self._ts:06d}"
        if method == "auth.test":
            return {"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "user": "diag"}
        if method == "chat.postMessage":
            return {"ok": True, "channel": params.get("channel"), "ts": ts, "message": {"ts": ts}}
        if method == "files.info":
            name = params.get("file", "")
            return {"ok": True, "file": {"id": name, "name": name, "size": len(self.files.get(name, b"")),
                                         "url_private_download": f"{self.url}/files/{name}"}}
        return {"ok": True}

    def posted(self, method: str = "chat.postMessage", **match: Any) -> list[dict[str, Any]]:
        with self.lock:
            return [p for m, p in self.calls if m == method and all(p.get(k) == v for k, v in match.items())]

    def __enter__(self) -> FakeSlack:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
