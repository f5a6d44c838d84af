"""Small file-system helpers: whole-or-nothing writes (:func:`atomic_write`) and directory flushes for the stores
that write atomically (knowledge base, label ledger, the extractor's scan cache), and the checked open of an
untrusted bundle's files (:func:`open_regular`)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from diag_service.errors import DiagError, ErrorKind


def fsync_dir(d: Path) -> None:
    """Flush a directory entry (after a rename) to disk. Best effort: a directory that cannot be
    opened or whose file system refuses ``fsync`` on directories is left as it is."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a fsynced temporary file ``.<name>.*.tmp`` beside it (mode 0644),
    renamed over it, then the directory flushed. Raises OSError; the temporary file is removed on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


class UnsafePathError(DiagError, OSError):
    """A path that may not be read: a symbolic link (where none is allowed, or whose target leaves the
    bundle's root), or not a regular file (a device such as ``/dev/zero``, a pipe, a socket, a folder).
    An :class:`OSError` too, so that every reader that skips an unreadable member skips this one with a
    warning."""

    kind = ErrorKind.INPUT


def _under(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def open_regular(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> BinaryIO:
    """Open ``path`` for binary reading, checked at the moment it is opened.

    Without ``root``: the last component must not be a symbolic link (``O_NOFOLLOW``). With ``root`` (the
    bundle folder the path was found in): links are resolved, and the real path must lie under the real
    path of ``root``; the resolved path is then opened with ``O_NOFOLLOW``, and on Linux the path of the
    opened descriptor (``/proc/self/fd``) is checked against the root again, so a folder on the way swapped
    for a link between the check and the open is caught. Either way the opened file must be a regular file
    (``fstat``): devices, pipes and sockets are refused without blocking (``O_NONBLOCK``) and without a
    byte read. Raises :class:`UnsafePathError` for those, ``OSError`` when the file cannot be opened."""
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    real_root = None
    if root is not None:
        real_root = os.path.realpath(root)
        real = os.path.realpath(p)
        if not _under(real, real_root):
            raise UnsafePathError(f"{os.path.basename(p)}: a symbolic link leaving the folder it is read from: refused")
        p = real
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(f"{os.path.basename(p)}: a symbolic link, not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(f"{os.path.basename(p)}: not a regular file (a device, pipe or socket): refused")
        if real_root is not None:
            try:
                opened = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                opened = None  # no /proc (not Linux): the checks before the open stand
            if opened is not None and not _under(opened, real_root):
                raise UnsafePathError(f"{os.path.basename(p)}: moved out of the folder it is read from: refused")
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):
        os.set_blocking(fd, True)
    return fh


def read_regular(path: str | os.PathLike[str], max_bytes: int, root: str | os.PathLike[str] | None = None) -> bytes:
    """At most ``max_bytes`` of a regular file opened with :func:`open_regular` (same checks, same errors)."""
    with open_regular(path, root) as fh:
        return fh.read(max_bytes)
