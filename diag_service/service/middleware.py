"""Pure ASGI middleware: request metrics, body-size and body-read-time limits, and the request deadline.

Body limits are enforced while the body streams in: a declared ``Content-Length`` above the limit
is refused before reading; an undeclared (chunked) body is counted and refused (413) as soon as it
passes the limit. A pause between two body chunks longer than ``body_read_timeout_s`` is a 408.
The whole request has ``request_timeout_s``; past it the client gets a 504 (if nothing was sent yet).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException

from diag_service.service.metrics import Metrics

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _send_json(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class LimitsMiddleware:
    """Body size per route (``body_limit(path)``), body read timeout, request deadline, and metrics."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, body_limit: Callable[[str], int], read_timeout_s: float,
                 request_timeout_s: float, untimed_prefixes: tuple[str, ...] = ()) -> None:
        self.app = app
        self.metrics = metrics
        self.body_limit = body_limit
        self.read_timeout_s = read_timeout_s
        self.request_timeout_s = request_timeout_s
        self.untimed_prefixes = untimed_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        path = scope.get("path", "")
        limit = self.body_limit(path)
        status = {"code": 500, "started": False}
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                n = int(declared)
            except ValueError:
                n = -1
            if n < 0:
                await _send_json(send, 400, "invalid Content-Length header")
                self._observe(scope, 400, t0)
                return
            if n > limit:
                self.metrics.refusals.labels("body_size").inc()
                await _send_json(send, 413, f"request body of {n} bytes is larger than the limit of {limit} bytes")
                self._observe(scope, 413, t0)
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            try:
                msg = await asyncio.wait_for(receive(), self.read_timeout_s)
            except TimeoutError:
                self.metrics.refusals.labels("body_timeout").inc()
                raise HTTPException(408, f"no request body data for {self.read_timeout_s:.0f} s") from None
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > limit:
                    self.metrics.refusals.labels("body_size").inc()
                    raise HTTPException(413, f"request body larger than the limit of {limit} bytes")
            return msg

        async def tracking_send(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                status["code"] = msg["status"]
                status["started"] = True
            await send(msg)

        try:
            if any(path.startswith(p) for p in self.untimed_prefixes):
                await self.app(scope, limited_receive, tracking_send)
            else:
                await asyncio.wait_for(self.app(scope, limited_receive, tracking_send), self.request_timeout_s)
        except TimeoutError:
            self.metrics.refusals.labels("request_timeout").inc()
            if not status["started"]:
                status["code"] = 504
                await _send_json(send, 504, f"request took longer than {self.request_timeout_s:.0f} s (request_timeout_s)")
        except HTTPException as exc:  # raised by limited_receive outside a route's exception handling
            if not status["started"]:
                status["code"] = exc.status_code
                await _send_json(send, exc.status_code, str(exc.detail))
        finally:
            self._observe(scope, status["code"], t0)

    def _observe(self, scope: Scope, code: int, t0: float) -> None:
        route = scope.get("route")
        name = getattr(route, "path", None) or "unmatched"
        self.metrics.request_seconds.labels(scope.get("method", "?"), name, str(code)).observe(time.perf_counter() - t0)
