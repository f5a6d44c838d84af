"""Python ``re`` patterns compiled from a per-machine cache of their compiled code.

Loading the signature catalogue compiles ~800 Python regexes (each signature's patterns, its context patterns, the
union of all of them): about 0.1 CPU-s of every cold ``diag diagnose`` on the bench machine, spent in ``re``'s
pure-Python parser and code generator (``re._parser``, ``re._compiler``), whose output depends on nothing but the
pattern, the flags and the Python build. :class:`ReCache` keeps that output (the arguments ``re._compiler.compile``
passes to ``_sre.compile``) in one file under the cache folder, keyed by the Python build, and builds the pattern
object from it directly.

An entry is kept only when the object built from it equals the one ``re.compile`` returned (a ``re.Pattern``
compares its pattern, flags and code), so a cached pattern is the pattern ``re.compile`` gives. A pattern that does
not compile raises ``re.error`` as ``re.compile`` does. Any other problem (another Python's ``re`` internals, an
unreadable or damaged cache file) falls back to ``re.compile``.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import re
import sys
import threading
from pathlib import Path
from typing import Any

try:  # CPython's internals; without them every pattern goes through re.compile
    import _sre
    from re import _compiler, _parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _sre = _compiler = _parser = None  # type: ignore[assignment]

#: at most this many patterns are kept in the file (the last catalogues' patterns)
MAX_ENTRIES = 20_000


def _build_key() -> str:
    magic = getattr(_sre, "MAGIC", "")
    return hashlib.sha256(f"{sys.version}|{sys.implementation.name}|{magic}".encode()).hexdigest()[:16]


def _entry(pattern: str) -> tuple | None:
    """What ``re._compiler.compile(pattern, 0)`` passes to ``_sre.compile`` after the pattern, as plain data."""
    p = _parser.parse(pattern, 0)
    code = [int(c) for c in _compiler._code(p, 0)]
    groupindex = {str(k): int(v) for k, v in p.state.groupdict.items()}
    indexgroup: list[str | None] = [None] * p.state.groups
    for k, i in groupindex.items():
        indexgroup[i] = k
    return int(p.state.flags), code, int(p.state.groups - 1), groupindex, tuple(indexgroup)


class ReCache:
    """``compile(pattern)`` as ``re.compile(pattern)``, from the cache file when the pattern is in it."""

    def __init__(self, folder: Path | None) -> None:
        self._path = None if folder is None or _sre is None else folder / f"re-{_build_key()}.marshal"
        self._codes: dict[str, tuple] = {}
        self._new = 0
        self._lock = threading.Lock()
        if self._path is not None:
            with contextlib.suppress(Exception):  # no file yet, or damaged: start empty
                blob = self._path.read_bytes()
                digest, body = blob[:32], blob[32:]
                if hashlib.sha256(body).digest() == digest:
                    codes = marshal.loads(body)
                    if isinstance(codes, dict):
                        self._codes = codes

    def compile(self, pattern: str) -> re.Pattern[str]:
        got = self._codes.get(pattern)
        if got is not None:
            try:
                return _sre.compile(pattern, *got)  # type: ignore[no-any-return]
            except Exception:  # noqa: BLE001 - a stale entry: compiled again below
                pass
        obj = re.compile(pattern)  # a pattern that does not compile raises here, as before
        if self._path is not None and isinstance(pattern, str):
            with contextlib.suppress(Exception):
                entry = _entry(pattern)
                if entry is not None and _sre.compile(pattern, *entry) == obj:
                    with self._lock:
                        self._codes[pattern] = entry
                        self._new += 1
        return obj

    def save(self) -> None:
        """Write the file when patterns were added (a cache that cannot be written is passed over)."""
        if self._path is None or not self._new:
            return
        from diag_service.fsutil import atomic_write

        with self._lock:
            codes: dict[str, Any] = dict(list(self._codes.items())[-MAX_ENTRIES:])
            self._new = 0
        with contextlib.suppress(Exception):
            body = marshal.dumps(codes)
            self._path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self._path, hashlib.sha256(body).digest() + body)


_shared: ReCache | None = None


def shared() -> ReCache:
    """The process's cache, in ``<cache>/re`` (:func:`diag_service.resources.cache_home`), loaded on first use."""
    global _shared
    if _shared is None:
        folder = None
        with contextlib.suppress(Exception):
            from diag_service.resources import cache_home

            folder = cache_home() / "re"
        _shared = ReCache(folder)
    return _shared
