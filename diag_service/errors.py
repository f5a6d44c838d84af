"""One error root for the whole package: every error the tool raises on purpose is a :class:`DiagError`
of one :class:`ErrorKind`, and each kind has one exit code (CLI) and one HTTP status (service).

=============  =========  ===========  ==========================================================
kind           exit code  HTTP status  meaning
=============  =========  ===========  ==========================================================
``input``      2          422          the data handed in is unusable (missing, malformed, empty)
``config``     3          500          a catalogue, policy, calibration or settings file is invalid
``refused``    4          403          a safety check refused the request (execution, upload)
``unavailable`` 5         503          a needed resource is busy, missing or not installed
``internal``   1          500          an engine or worker failed; the work done so far is kept
=============  =========  ===========  ==========================================================

Subclasses set :attr:`DiagError.kind` (and may set :attr:`DiagError.http_status` for a more precise
status, e.g. 413 for an upload over the size limit). Interfaces translate with :func:`exit_code` and
:func:`http_status`; nothing else in the package picks exit codes or statuses for these errors.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class ErrorKind(StrEnum):
    INPUT = "input"
    CONFIG = "config"
    REFUSED = "refused"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


#: Exit code of each kind (0 is success; typer/click use 2 for usage errors, which are input errors too).
EXIT_CODES: dict[ErrorKind, int] = {
    ErrorKind.INPUT: 2,
    ErrorKind.CONFIG: 3,
    ErrorKind.REFUSED: 4,
    ErrorKind.UNAVAILABLE: 5,
    ErrorKind.INTERNAL: 1,
}

#: HTTP status of each kind (RFC 9110: 422 unprocessable content, 403 forbidden, 503 unavailable).
HTTP_STATUSES: dict[ErrorKind, int] = {
    ErrorKind.INPUT: 422,
    ErrorKind.CONFIG: 500,
    ErrorKind.REFUSED: 403,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.INTERNAL: 500,
}

#: How a person reads each kind in a one-line message.
LABELS: dict[ErrorKind, str] = {
    ErrorKind.INPUT: "error",
    ErrorKind.CONFIG: "configuration error",
    ErrorKind.REFUSED: "refused",
    ErrorKind.UNAVAILABLE: "unavailable",
    ErrorKind.INTERNAL: "failed",
}


class DiagError(Exception):
    """Root of every deliberate error of the package. ``kind`` decides the exit code and HTTP status."""

    kind: ClassVar[ErrorKind] = ErrorKind.INPUT
    #: a more precise HTTP status than the kind's (None: the kind's)
    http_status: ClassVar[int | None] = None


class InputError(DiagError):
    """Input an interface itself found unusable (an unreadable file, a malformed option value)."""

    kind = ErrorKind.INPUT


class ConfigError(DiagError):
    """A configuration an interface itself found invalid (the service's settings, an address it will not
    serve without tokens)."""

    kind = ErrorKind.CONFIG


class Refused(DiagError):
    """Input the service will not take, with its own HTTP ``status`` (413 a limit, 422 invalid, 403/404 a
    path, 409 out of order) and a stable ``reason`` code for the error body and the refusal metrics."""

    kind = ErrorKind.REFUSED

    def __init__(self, status: int, message: str, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


class MissingExtra(DiagError):
    """A command needs a package of an optional extra that is not installed (``pip install 'diag-service[x]'``)."""

    kind = ErrorKind.UNAVAILABLE


def extras_providing(module: str) -> list[str]:
    """The package's extras whose requirements include the distribution of top-level module ``module``
    (read from the installed package's metadata, so it follows ``pyproject.toml``); ``[]`` when none does
    or the metadata is not there. ``faiss`` matches ``faiss-cpu``; ``_`` and ``-`` are the same."""
    import re
    from importlib.metadata import PackageNotFoundError, requires

    want = module.split(".")[0].lower().replace("_", "-")
    try:
        reqs = requires("diag-service") or []
    except PackageNotFoundError:
        return []
    found: list[str] = []
    for r in reqs:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*).*?extra\s*==\s*[\"']([\w-]+)[\"']", r)
        if m is None:
            continue
        dist, extra = m.group(1).lower().replace("_", "-").replace(".", "-"), m.group(2)
        if extra != "all" and (dist == want or dist.startswith(want + "-")) and extra not in found:
            found.append(extra)
    return found


def missing_extra(exc: ModuleNotFoundError, what: str, prefer: str | None = None) -> MissingExtra:
    """A :class:`MissingExtra` for ``exc`` that names the missing package and the extra to install.
    ``what`` names who needs it (``"diag serve"``); ``prefer``: the extra to name when it is one of those
    that provide the package (the command's own: ``service`` for ``diag serve``)."""
    name = (exc.name or str(exc)).split(".")[0]
    extras = extras_providing(name)
    extra = prefer if prefer in extras else extras[0] if extras else prefer or "all"
    return MissingExtra(f"{what} needs the package {name!r}, which is not installed: "
                        f"pip install 'diag-service[{extra}]'")


def exit_code(exc: DiagError) -> int:
    """The process exit code for ``exc`` (:data:`EXIT_CODES`)."""
    return EXIT_CODES[exc.kind]


def http_status(exc: DiagError) -> int:
    """The HTTP status for ``exc``: its class's own, else its kind's (:data:`HTTP_STATUSES`)."""
    own = getattr(exc, "status", None) or exc.http_status
    return int(own) if own else HTTP_STATUSES[exc.kind]


__all__ = ["EXIT_CODES", "HTTP_STATUSES", "LABELS", "ConfigError", "DiagError", "ErrorKind", "InputError", "MissingExtra",
           "Refused", "exit_code", "extras_providing", "http_status", "missing_extra"]
