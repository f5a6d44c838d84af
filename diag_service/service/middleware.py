"""Pure ASGI middleware: request metrics, body-size and body-read-time limits, the request deadline
(:class:`LimitsMiddleware`); the client address behind trusted proxies, the Host allow-list and the
refusal of cross-site writes (:class:`EdgeMiddleware`); security headers (:class:`SecurityHeadersMiddleware`).

Body limits are enforced while the body streams in: a declared ``Content-Length`` above the limit
is refused before reading; an undeclared (chunked) body is counted and refused (413) as soon as it
passes the limit. A pause between two body chunks longer than ``body_read_timeout_s`` is a 408.
The whole request has ``request_timeout_s``; past it the client gets a 504 (if nothing was sent yet).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException

from diag_service.service.metrics import Metrics
from diag_service.service.settings import origin_key

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _send_json(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None,
                     reason: str | None = None) -> None:
    body = json.dumps({"detail": detail, **({"reason": reason} if reason else {})}).encode()
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


#: Methods that change nothing (RFC 9110 §9.2.1); every other method is checked for a cross-site origin.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
#: GET paths answered whatever the Host header says: orchestrators probe and scrape by the pod's address.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address from a forwarded hop (``1.2.3.4``, ``1.2.3.4:5678``, ``[::1]:80``, ``::1``), or None."""
    v = value.strip()
    if v.startswith("[") and "]" in v:
        v = v[1:v.find("]")]
    elif v.count(":") == 1:
        v = v.split(":")[0]
    try:
        return ipaddress.ip_address(v)
    except ValueError:
        return None


def split_host(host: str) -> tuple[str, int | None]:
    """A Host header as (lower-case name without a trailing dot, IPv6 without brackets; port or None)."""
    h = host.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        name, rest = (h[1:end], h[end + 1:]) if end > 0 else (h, "")
    else:
        name, _, rest = h.partition(":")
        rest = ":" + rest if rest else ""
    port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() and len(rest) <= 6 else None
    return name.rstrip("."), port


class EdgeMiddleware:
    """What a request must be before any route sees it.

    1. **Client address**: when the peer is one of ``trusted_proxies`` (addresses or CIDR networks), the
       client is the right-most ``X-Forwarded-For`` hop that is not a trusted proxy, and the scheme is the
       last ``X-Forwarded-Proto``; from any other peer both headers are ignored, so a client cannot choose
       its own address (the per-address rate limits key on it).
    2. **Host**: the ``Host`` header's name must be one of ``allowed_hosts`` (``*`` any, ``*.example.org``
       a subdomain), else 400 ``reason: host``: a page of another site whose name resolves to this
       service (DNS rebinding) is not served. ``GET`` of :data:`PROBE_PATHS` is exempt.
    3. **Cross-site writes**: a request with an unsafe method (not in :data:`SAFE_METHODS`) whose ``Origin``
       is neither this service's own (same host and port as the ``Host`` header) nor one of
       ``allowed_origins`` (``scheme://host:port`` keys), or which has no ``Origin`` but says
       ``Sec-Fetch-Site: cross-site`` / ``same-site``, gets 403 ``reason: cross_site``: a form post or a
       ``text/plain`` upload from another web page. Requests from programs (curl, controllers, Slack)
       carry neither header and pass.
    """

    def __init__(self, app: ASGIApp, *, metrics: Metrics, allowed_hosts: Sequence[str], allowed_origins: Sequence[str],
                 trusted_proxies: Sequence[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.any_host = "*" in allowed_hosts
        self.hosts = frozenset(h for h in allowed_hosts if not h.startswith("*"))
        self.suffixes = tuple(h[1:] for h in allowed_hosts if h.startswith("*."))
        self.origins = frozenset(allowed_origins)
        self.proxies = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]

    def _trusted(self, addr: str) -> bool:
        ip = _ip(addr)
        return ip is not None and any(ip in net for net in self.proxies)

    def host_allowed(self, name: str) -> bool:
        """Whether a Host name (as :func:`split_host` gives it) is served."""
        return self.any_host or name in self.hosts or (bool(name) and name.endswith(self.suffixes))

    def cross_site(self, headers: Headers) -> str | None:
        """Why an unsafe request comes from another site, or None when it does not (or cannot be told)."""
        origin = headers.get("origin")
        if origin is not None:
            parts = urlsplit(origin.strip().lower())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return f"request from origin {origin[:100]!r} refused"
            default = 443 if parts.scheme == "https" else 80
            try:
                port = parts.port or default
            except ValueError:
                return f"request from origin {origin[:100]!r} refused"
            name, host_port = split_host(headers.get("host", ""))
            if parts.hostname == name and port == (host_port or default):
                return None
            if origin_key(parts.scheme, parts.hostname, port) in self.origins:
                return None
            return (f"cross-site request from {origin[:100]!r} refused (the service's own pages and allowed_origins "
                    "may send it)")
        site = headers.get("sec-fetch-site")
        if site is not None and site.strip().lower() not in ("same-origin", "none"):
            return f"cross-site request refused (Sec-Fetch-Site: {site[:20]})"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        client = scope.get("client")
        if self.proxies and client and self._trusted(client[0]):
            hops = [h.strip() for h in ",".join(headers.getlist("x-forwarded-for")).split(",") if h.strip()]
            addr = client[0]
            for hop in reversed(hops):
                ip = _ip(hop)
                addr = str(ip) if ip is not None else hop[:64]
                if ip is None or not any(ip in net for net in self.proxies):
                    break
            scope["client"] = (addr, 0)
            proto = headers.get("x-forwarded-proto", "").rsplit(",", 1)[-1].strip().lower()
            if proto in ("http", "https"):
                scope["scheme"] = proto if scope["type"] == "http" else {"http": "ws", "https": "wss"}[proto]
        method = scope.get("method", "GET")
        name, _ = split_host(headers.get("host", ""))
        if not self.host_allowed(name) and not (method in ("GET", "HEAD") and scope.get("path") in PROBE_PATHS):
            self.metrics.refusals.labels("host").inc()
            await _send_json(send, 400, f"host {name[:100]!r} is not served here (allowed_hosts)", reason="host")
            return
        if scope["type"] == "http" and method not in SAFE_METHODS:
            why = self.cross_site(headers)
            if why is not None:
                self.metrics.refusals.labels("cross_site").inc()
                await _send_json(send, 403, why, reason="cross_site")
                return
        await self.app(scope, receive, send)


#: Content-Security-Policy of the JSON API (and anything not listed below): nothing may load or frame it.
CSP_API = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
#: The pages (``/ui``): their own inline <style> and style attributes (templates/base.html), forms posting
#: to this origin, no script at all, never framed (clickjacking of the feedback buttons).
CSP_PAGES = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
             "base-uri 'none'; frame-ancestors 'none'")
#: FastAPI's ``/docs`` (Swagger UI) and ``/redoc`` load their scripts, styles and fonts from these CDNs
#: (fastapi.openapi.docs: cdn.jsdelivr.net, fonts.googleapis.com, the fastapi.tiangolo.com favicon).
CSP_DOCS = ("default-src 'none'; script-src 'unsafe-inline' https://cdn.jsdelivr.net; "
            "style-src 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
            "font-src https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
            "connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def content_security_policy(path: str) -> str:
    """The CSP for a request path: :data:`CSP_PAGES`, :data:`CSP_DOCS` or :data:`CSP_API`."""
    if path == "/ui" or path.startswith("/ui/"):
        return CSP_PAGES
    if path.startswith(("/docs", "/redoc")):
        return CSP_DOCS
    return CSP_API


class SecurityHeadersMiddleware:
    """Security headers on every response, pages and API, unless the route set its own:
    ``Content-Security-Policy`` (:func:`content_security_policy`, always ``frame-ancestors 'none'``),
    ``X-Frame-Options: DENY`` (older browsers), ``X-Content-Type-Options: nosniff`` (an upload echoed
    back is never run as script or style), ``Referrer-Policy: no-referrer`` (diagnosis ids in URLs stay
    here) and ``Cross-Origin-Resource-Policy: same-origin``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [(b"content-security-policy", content_security_policy(scope.get("path", "")).encode()),
                 (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                 (b"referrer-policy", b"no-referrer"), (b"cross-origin-resource-policy", b"same-origin")]

        async def with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                present = {k.lower() for k, _ in msg.get("headers", [])}
                msg["headers"] = [*msg.get("headers", []), *((k, v) for k, v in extra if k not in present)]
            await send(msg)

        await self.app(scope, receive, with_headers)
