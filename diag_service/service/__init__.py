"""HTTP diagnosis service (``diag serve``): FastAPI + uvicorn over the shared core.

Entry points: :func:`create_app` (settings in, FastAPI app out), :func:`load_settings`, and
:func:`diag_service.service.cli.serve` (the ``diag serve`` command). See ``docs/service.md``.

The names below are imported on first use, so ``diag`` commands that do not serve never import
FastAPI (the ``[service]`` extra).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "create_app": "diag_service.service.app",
    "Settings": "diag_service.service.settings",
    "SlackSettings": "diag_service.service.settings",
    "TokenSpec": "diag_service.service.settings",
    "UploadLimits": "diag_service.service.settings",
    "WebhookSpec": "diag_service.service.settings",
    "load_settings": "diag_service.service.settings",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
