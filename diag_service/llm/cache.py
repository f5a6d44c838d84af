"""Summary cache: one SQLite file, ``<cache>/llm/summaries.sqlite``, keyed by evidence-pack hash.

Two tables. ``summaries``: accepted model summaries. The key (:func:`cache_key`) covers the evidence
pack's digest, the model and backend name, the prompt templates' digest and the generation
parameters, so identical failures (and the members of a batch cluster) are summarised once, and any
change of model or prompt misses. Fallbacks are not stored there: they are recomputed, so that a
model that comes back is used.

``generations``: the model's raw answers, keyed by :func:`generation_key` (backend name and the
whole request: messages, token limit, temperature, JSON schema, prefill). Only repeatable answers
are stored (:func:`repeatable`: a local model whose name carries its weights' sha256, greedy
decoding, not cut by the time limit), so the same request gives the same text again; the answer's
checks are run again on it every time. A job whose answer the checks reject is thus not sent to the
model again on the next run (same answer, same verdict), and a change of the checks applies to the
stored answer.

Any cache error (locked, corrupt, read-only disk) is logged and ignored: the cache never makes a
summary fail.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diag_service.domain import Narrative
from diag_service.llm.backends import LOCAL_KINDS, Generation, GenerationRequest

log = logging.getLogger("diag_service.llm")

_SCHEMA = "CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, narrative TEXT NOT NULL, created REAL NOT NULL)"
_SCHEMA_GEN = "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, generation TEXT NOT NULL, created REAL NOT NULL)"
#: An answer that took this share of the request's time limit may have been cut by it (not repeatable).
_TIME_LIMIT_SHARE = 0.9


def cache_key(pack_digest: str, model: str, prompts_digest: str, generation: dict) -> str:
    """sha256 over everything that determines a model's summary."""
    payload = json.dumps({"pack": pack_digest, "model": model, "prompts": prompts_digest, "gen": generation}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def generation_key(backend: str, request: GenerationRequest) -> str:
    """sha256 over the backend name ``backend`` and everything in ``request`` that shapes the answer
    (the time limit is left out: it only decides whether an answer is kept, see :func:`repeatable`)."""
    payload = json.dumps({"backend": backend, "messages": request.messages, "max_new_tokens": request.max_new_tokens,
                          "temperature": request.temperature, "schema": request.json_schema, "prefill": request.prefill},
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def replayable_backend(backend: str) -> bool:
    """True for the backends whose answers may be stored: the local ones (``llamacpp:``, ``transformers:``),
    whose name carries the weights' sha256. An OpenAI-compatible server can change the model behind a
    name, and batched serving need not decode deterministically."""
    return backend.split(":", 1)[0] in LOCAL_KINDS


def repeatable(backend: str, request: GenerationRequest, out: Generation) -> bool:
    """True when ``out`` is what the same ``request`` to ``backend`` would give again: a
    :func:`replayable_backend`, greedy decoding (temperature 0) and not stopped by the time limit (no
    ``length`` stop short of the token limit, and a total time under 90 % of ``request.timeout_s``,
    since transformers' ``max_time`` stop is reported as ``stop``)."""
    if not replayable_backend(backend) or request.temperature != 0:
        return False
    if out.finish_reason == "length" and 0 < out.completion_tokens < request.max_new_tokens:
        return False
    return out.total_s < _TIME_LIMIT_SHARE * request.timeout_s


class SummaryCache:
    """Get and put :class:`Narrative` objects by key. ``path``: the SQLite file (created on first put)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=5)
        con.execute(_SCHEMA)
        con.execute(_SCHEMA_GEN)
        return con

    def _row(self, query: str, key: str) -> tuple[Any, ...] | None:
        """The first row of ``query`` with ``key``, or None (no cache file, no row, or a cache error, logged)."""
        if not self.path.is_file():
            return None
        try:
            con = self._connect()
            try:
                row: tuple[Any, ...] | None = con.execute(query, (key,)).fetchone()
            finally:
                con.close()
        except sqlite3.Error as exc:
            log.warning("summary cache %s unreadable: %s", self.path, exc)
            return None
        return row

    def get(self, key: str) -> Narrative | None:
        """The cached narrative, or None (also on any cache error or an entry that no longer validates)."""
        row = self._row("SELECT narrative FROM summaries WHERE key = ?", key)
        if row is None:
            return None
        try:
            return Narrative.model_validate_json(row[0])
        except ValidationError:
            return None

    def put(self, key: str, narrative: Narrative) -> None:
        """Store ``narrative`` under ``key`` (replacing an older entry). Errors are logged, never raised."""
        try:
            con = self._connect()
            try:
                with con:
                    con.execute("INSERT OR REPLACE INTO summaries (key, narrative, created) VALUES (?, ?, ?)",
                                (key, narrative.model_dump_json(), time.time()))
            finally:
                con.close()
        except (sqlite3.Error, OSError) as exc:
            log.warning("summary cache %s not written: %s", self.path, exc)

    def __len__(self) -> int:
        if not self.path.is_file():
            return 0
        try:
            con = self._connect()
            try:
                return int(con.execute("SELECT COUNT(*) FROM summaries").fetchone()[0])
            finally:
                con.close()
        except sqlite3.Error:
            return 0

    def get_generation(self, key: str) -> Generation | None:
        """The stored raw answer under ``key`` (:func:`generation_key`), or None (also on any cache error)."""
        row = self._row("SELECT generation FROM generations WHERE key = ?", key)
        if row is None:
            return None
        try:
            data: dict[str, Any] = json.loads(row[0])
            names = {f.name for f in dataclasses.fields(Generation)}
            return Generation(**{k: v for k, v in data.items() if k in names})
        except (ValueError, TypeError):
            return None

    def put_generation(self, key: str, out: Generation) -> None:
        """Store the raw answer ``out`` under ``key``. Errors are logged, never raised."""
        try:
            doc = json.dumps(dataclasses.asdict(out))
            con = self._connect()
            try:
                with con:
                    con.execute("INSERT OR REPLACE INTO generations (key, generation, created) VALUES (?, ?, ?)",
                                (key, doc, time.time()))
            finally:
                con.close()
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            log.warning("summary cache %s not written: %s", self.path, exc)
