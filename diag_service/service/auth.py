"""Bearer tokens with scopes, per-token rate limits, and a limit on failed authentications per address.

Tokens come from the settings; only their SHA-256 digests are kept in memory for comparison, and
only their names are logged or shown. A request carries its token in ``Authorization: Bearer …``
or, for the pages in a browser, in the ``diag_token`` cookie set by ``/ui/login``. A client address
that presented ``auth_failures_max`` wrong tokens gets 429, whatever token it sends, until its
allowance refills (all of it in ``auth_failures_window_s``): guessing tokens is that slow.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import threading
import time
from dataclasses import dataclass

from fastapi import HTTPException, Request

from diag_service.service.settings import SCOPES, Settings

COOKIE = "diag_token"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a token's name and scopes, or ``anonymous`` (all scopes) when auth is off."""

    name: str
    scopes: frozenset[str]


class _Bucket:
    __slots__ = ("tokens", "last")

    def __init__(self, tokens: float, last: float) -> None:
        self.tokens = tokens
        self.last = last


class RateLimiter:
    """Token bucket per key: ``rate_per_minute`` sustained, ``burst`` at once. Bounded to 10,000 keys."""

    def __init__(self, rate_per_minute: float, burst: int) -> None:
        self.rate = rate_per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one request of ``key``: 0 when allowed, else seconds until the next one is."""
        now = time.monotonic()
        with self._lock:
            b = self._buckets.get(key)
            if b is None:
                if len(self._buckets) >= 10_000:
                    self._buckets.clear()
                b = self._buckets[key] = _Bucket(self.burst, now)
            b.tokens = min(self.burst, b.tokens + (now - b.last) * self.rate)
            b.last = now
            if b.tokens >= 1.0:
                b.tokens -= 1.0
                return 0.0
            return (1.0 - b.tokens) / self.rate

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may spend one request (0: now), without spending it."""
        now = time.monotonic()
        with self._lock:
            b = self._buckets.get(key)
            if b is None:
                return 0.0
            tokens = min(self.burst, b.tokens + (now - b.last) * self.rate)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate


class Auth:
    """Authenticates requests against the configured tokens and applies the rate limit."""

    def __init__(self, settings: Settings) -> None:
        self.required = settings.auth_required
        self._by_digest = {
            hashlib.sha256(t.token.get_secret_value().encode()).digest(): Principal(t.name, frozenset(t.scopes))
            for t in settings.tokens
        }
        self.limiter = RateLimiter(settings.rate_per_minute, settings.rate_burst)
        self.failures = RateLimiter(settings.auth_failures_max * 60.0 / settings.auth_failures_window_s,
                                    settings.auth_failures_max)

    @staticmethod
    def address(request: Request) -> str:
        """The client address a request's limits are keyed on (after trusted proxies, :class:`EdgeMiddleware`)."""
        return f"ip:{request.client.host if request.client else '?'}"

    def identify(self, request: Request) -> Principal | None:
        """The principal of a request's token; None when it carries no valid one (auth off: anonymous).
        Raises ``HTTPException(429)`` while the caller's address is locked out (:meth:`authenticate`)."""
        if not self.required:
            return Principal("anonymous", frozenset(SCOPES))
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else request.cookies.get(COOKIE, "")
        return self.authenticate(request, token)

    def authenticate(self, request: Request, token: str) -> Principal | None:
        """:meth:`principal_for` under the failed-authentication limit of the caller's address.

        No token: None (not a failure). A wrong token: None, and one failure counted. While the address
        has no failures left: ``HTTPException(429)`` with ``Retry-After``, before the token is looked at,
        so a right guess is not told apart from a wrong one.
        """
        if not self.required:
            return Principal("anonymous", frozenset(SCOPES))
        if not token:
            return None
        key = self.address(request)
        wait = self.failures.wait(key)
        if wait > 0:
            raise HTTPException(429, f"too many failed authentications from this address; retry in {math.ceil(wait)} s",
                                headers={"Retry-After": str(math.ceil(wait))})
        principal = self.principal_for(token)
        if principal is None:
            self.failures.take(key)
        return principal

    def principal_for(self, token: str) -> Principal | None:
        """The principal a token stands for, or None (auth off: anonymous)."""
        if not self.required:
            return Principal("anonymous", frozenset(SCOPES))
        if not token:
            return None
        digest = hashlib.sha256(token.encode("utf-8", "replace")).digest()
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        return None

    def check(self, request: Request, scope: str) -> Principal:
        """The caller if it may use ``scope``; else 401 (no or unknown token), 403 (scope), 429 (rate, or too many
        failed authentications from the address)."""
        principal = self.identify(request)
        if principal is None:
            raise HTTPException(401, "missing or unknown bearer token (Authorization: Bearer <token>)",
                                headers={"WWW-Authenticate": "Bearer"})
        key = principal.name if self.required else self.address(request)
        wait = self.limiter.take(key)
        if wait > 0:
            raise HTTPException(429, f"rate limit exceeded for {principal.name}; retry in {math.ceil(wait)} s",
                                headers={"Retry-After": str(math.ceil(wait))})
        if scope not in principal.scopes:
            raise HTTPException(403, f"token {principal.name!r} lacks the {scope!r} scope")
        request.state.principal = principal
        return principal
