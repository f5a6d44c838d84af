"""Summary cache: one SQLite file, ``<cache>/llm/summaries.sqlite``, keyed by evidence-pack hash.

The key (:func:`cache_key`) covers the evidence pack's digest, the model and backend name, the prompt
templates' digest and the generation parameters, so identical failures (and the members of a batch
cluster) are summarised once, and any change of model or prompt misses. Only model answers are
stored; fallbacks are cheap and are recomputed, so that a model that comes back is used. Any cache
error (locked, corrupt, read-only disk) is logged and ignored: the cache never makes a summary fail.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from pathlib import Path

from pydantic import ValidationError

from diag_service.domain import Narrative

log = logging.getLogger("diag_service.llm")

_SCHEMA = "CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, narrative TEXT NOT NULL, created REAL NOT NULL)"


def cache_key(pack_digest: str, model: str, prompts_digest: str, generation: dict) -> str:
    """sha256 over everything that determines a model's summary."""
    payload = json.dumps({"pack": pack_digest, "model": model, "prompts": prompts_digest, "gen": generation}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class SummaryCache:
    """Get and put :class:`Narrative` objects by key. ``path``: the SQLite file (created on first put)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=5)
        con.execute(_SCHEMA)
        return con

    def get(self, key: str) -> Narrative | None:
        """The cached narrative, or None (also on any cache error or an entry that no longer validates)."""
        if not self.path.is_file():
            return None
        try:
            con = self._connect()
            try:
                row = con.execute("SELECT narrative FROM summaries WHERE key = ?", (key,)).fetchone()
            finally:
                con.close()
        except sqlite3.Error as exc:
            log.warning("summary cache %s unreadable: %s", self.path, exc)
            return None
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
