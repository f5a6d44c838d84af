"""The agent's outbox: every batch is written to disk before it is sent and removed only when the service
has acknowledged it, so a service that is away (or an agent that is restarted) loses nothing.

Files are ``<spool>/<ns>-<seq>.json`` (``ns``: the agent's start time in nanoseconds, so batches of an
earlier agent process on the same spool sort first and keep their own agent id and numbering). A batch
the service refuses as invalid (HTTP 4xx other than 401/403/408/409/429) is moved to ``rejected/`` and
reported, never retried or dropped.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("diag.watch")

#: Back-off between failed sends (seconds): doubles from the first to the last value.
BACKOFF_S = (0.25, 30.0)


@dataclass
class Spool:
    """Batches waiting for the service, in send order. ``max_bytes``: past this size the spool warns
    (once per crossing) but keeps writing: losing evidence is worse than using disk."""

    root: Path
    max_bytes: int = 1 << 30
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _warned: bool = False
    _bytes: int = 0  # bytes of the spooled batches, kept as they are put and removed (one scan at start)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "rejected").mkdir(exist_ok=True)
        self._bytes = sum(p.stat().st_size for p in self.pending())

    def put(self, prefix: str, seq: int, batch: dict[str, Any]) -> Path:
        """Write ``batch`` atomically as ``<prefix>-<seq>.json``; returns its path."""
        path = self.root / f"{prefix}-{seq:09d}.json"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(batch, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        with self._lock:
            self._bytes += path.stat().st_size
            size = self._bytes
        if size > self.max_bytes and not self._warned:
            log.warning("spool %s holds %d bytes (over %d): is the service reachable?", self.root, size, self.max_bytes)
            self._warned = True
        elif size <= self.max_bytes:
            self._warned = False
        return path

    def pending(self) -> list[Path]:
        """Spooled batches, oldest first."""
        return sorted(p for p in self.root.glob("*.json") if p.is_file())

    def size(self) -> int:
        """Bytes of the batches waiting to be sent."""
        with self._lock:
            return self._bytes

    def _forget(self, path: Path) -> None:
        try:
            n = path.stat().st_size
        except OSError:
            return
        with self._lock:
            self._bytes = max(0, self._bytes - n)

    def done(self, path: Path) -> None:
        self._forget(path)
        path.unlink(missing_ok=True)

    def reject(self, path: Path, reason: str) -> None:
        target = self.root / "rejected" / path.name
        self._forget(path)
        os.replace(path, target)
        target.with_suffix(".reason.txt").write_text(reason[:4000] + "\n")
        log.error("batch %s refused by the service, kept in %s: %s", path.name, target, reason[:300])


#: ``send(batch) -> (status, body)``: one HTTP request; raises OSError-like exceptions when unreachable.
SendFn = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def http_sender(service: str, job_id: str, token: str | None, timeout_s: float = 10.0) -> SendFn:
    """A :data:`SendFn` posting to ``{service}/v1/live/jobs/{job_id}/batches`` (httpx)."""
    import httpx

    client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {token}"} if token else {})
    url = f"{service.rstrip('/')}/v1/live/jobs/{job_id}/batches"

    def send(batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        r = client.post(url, json=batch)
        try:
            body = r.json()
        except ValueError:
            body = {"detail": r.text[:500]}
        return r.status_code, body if isinstance(body, dict) else {"detail": body}

    return send


class Sender(threading.Thread):
    """Sends the spool's batches in order, one at a time, until :meth:`stop` and an empty spool. After
    :meth:`stop` it gives up only when no batch was accepted for ``drain_s`` seconds (a service that is
    away or refuses), not after ``drain_s`` in all: a slow service that keeps accepting a backlog gets all
    of it. What is left stays in the spool for the next agent run with the same state folder. ``wake`` is
    set by the agent when a batch is spooled. ``on_ack(body)``: called with each acknowledgement (the
    service's ``BatchAck`` as JSON) in the sender's thread."""

    def __init__(self, spool: Spool, send: SendFn, drain_s: float = 30.0,
                 on_ack: Callable[[dict[str, Any]], None] | None = None) -> None:
        super().__init__(name="diag-watch-sender", daemon=True)
        self.spool = spool
        self.send = send
        self.on_ack = on_ack
        self.drain_s = drain_s
        self.wake = threading.Event()
        self._halt = threading.Event()
        self.sent = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_ack: dict[str, Any] | None = None
        self.refused: int | None = None  # the service refuses the agent's token (401/403): waiting cannot help

    def stop(self) -> None:
        self._halt.set()
        self.wake.set()

    def run(self) -> None:
        delay = BACKOFF_S[0]
        stop_at: float | None = None
        while True:
            if self._halt.is_set() and stop_at is None:
                stop_at = time.monotonic() + self.drain_s
            pending = self.spool.pending()
            if not pending:
                if self._halt.is_set():
                    return
                self.wake.wait(1.0)
                self.wake.clear()
                continue
            if stop_at is not None and (time.monotonic() > stop_at or self.refused is not None):
                why = (f"the service refuses this agent's token (HTTP {self.refused})" if self.refused is not None
                       else f"the service accepted none for {self.drain_s:.0f} s"
                       + (f" (last error: {self.last_error})" if self.last_error else ""))
                log.warning("%d batch(es) left in %s: %s; the next agent run with this state folder sends them",
                            len(pending), self.spool.root, why)
                return
            if self._send_one(pending[0]):
                delay = BACKOFF_S[0]
                if stop_at is not None:  # still delivering: the drain deadline counts from the last acceptance
                    stop_at = time.monotonic() + self.drain_s
            else:
                self.failures += 1
                self.wake.wait(delay)
                self.wake.clear()
                delay = min(BACKOFF_S[1], delay * 2)

    def send_pending(self) -> int:
        """Send what is spooled now, in order, in the caller's thread, until a batch is not accepted; returns how
        many were sent or settled (the agent's tests drive delivery with it)."""
        n = 0
        for path in self.spool.pending():
            if not self._send_one(path):
                break
            n += 1
        return n

    def _send_one(self, path: Path) -> bool:
        try:
            batch = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self.spool.reject(path, f"unreadable spool file: {exc}")
            return True
        try:
            status, body = self.send(batch)
        except Exception as exc:  # noqa: BLE001 - any transport error means "try again later"
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        if status == 200:
            self.spool.done(path)
            self.sent += 1
            self.last_ack = body
            if self.on_ack is not None:
                try:
                    self.on_ack(body)
                except Exception:  # noqa: BLE001 - a bad answer must not stop delivery
                    log.exception("acknowledgement of %s not understood", path.name)
            return True
        if status == 409 and isinstance(body.get("expected_seq"), int) and body["expected_seq"] > batch.get("seq", -1):
            self.spool.done(path)  # the service has it already (an ack lost on the way)
            return True
        if status in (401, 403):
            if self.refused != status:
                log.error("the service refused this agent's batches (HTTP %d): give the agent a token with the "
                          "'agent' scope in DIAG_AGENT_TOKEN (docs/service.md); nothing reaches the service until "
                          "then, and the batches are kept in %s", status, self.spool.root)
            self.refused = status
            self.last_error = f"HTTP {status}: {str(body)[:300]}"
            return False
        self.refused = None
        if status in (408, 409, 429) or status >= 500:
            self.last_error = f"HTTP {status}: {str(body)[:300]}"
            return False
        self.spool.reject(path, f"HTTP {status}: {json.dumps(body)[:3000]}")
        return True


__all__ = ["BACKOFF_S", "SendFn", "Sender", "Spool", "http_sender"]
