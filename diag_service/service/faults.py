"""A full disk, told apart from a bug: the service answers it with a JSON 507 and ends the job it hit.

A write that finds no space raises, depending on who writes: ``OSError`` with ``errno`` ``ENOSPC`` (or
``EDQUOT``, a quota) from a file write; ``sqlite3.OperationalError`` "database or disk is full"
(result code ``SQLITE_FULL``); a PostgreSQL error with SQLSTATE ``53100`` (``disk_full``); each maybe
wrapped by SQLAlchemy (``.orig``) or chained (``raise ... from``) into a
:class:`~diag_service.service.store.StoreError`. :func:`is_disk_full` looks through all of them.
"""

from __future__ import annotations

import errno

from diag_service.errors import DiagError, ErrorKind

#: ``errno`` values of a write that found no room: no space on the device, disk quota exceeded.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: SQLite's primary result code SQLITE_FULL (https://sqlite.org/rescode.html#full).
SQLITE_FULL = 13
#: PostgreSQL's SQLSTATE ``disk_full`` (PostgreSQL documentation, Appendix A, class 53).
PG_DISK_FULL = "53100"


class DiskFull(DiagError):
    """The service's disk (``data_dir``, or the temporary folder of multipart bodies) has no room to store what a
    request brought or a job produced. HTTP 507 (RFC 4918 Insufficient Storage), ``reason: disk_full``."""

    kind = ErrorKind.UNAVAILABLE
    http_status = 507
    reason = "disk_full"


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it wraps (``__cause__``, ``__context__``, SQLAlchemy's ``orig``), is a
    write that found no space (see the module docstring). At most 16 links are followed."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 16:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, DiskFull):
            return True
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
            return True
        code = getattr(e, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
            return True
        if type(e).__name__ == "OperationalError" and "database or disk is full" in str(e):
            return True
        if getattr(e, "sqlstate", None) == PG_DISK_FULL or getattr(e, "pgcode", None) == PG_DISK_FULL:
            return True
        orig = getattr(e, "orig", None)
        todo.extend([e.__cause__, e.__context__, orig if isinstance(orig, BaseException) else None])
    return False


def disk_full_message(what: str) -> str:
    """The one sentence every disk-full answer gives: ``what`` (e.g. ``"the upload"``) was not stored."""
    return (f"no space left on the service's disk: {what} was not stored; "
            "free space in the data folder (data_dir) or the temporary folder and retry")
