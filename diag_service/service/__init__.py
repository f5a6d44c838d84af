"""HTTP diagnosis service (``diag serve``): FastAPI + uvicorn over the shared core.

Entry points: :func:`create_app` (settings in, FastAPI app out), :func:`load_settings`, and
:func:`diag_service.service.cli.serve` (the ``diag serve`` command). See ``docs/service.md``.
"""

from diag_service.service.app import create_app
from diag_service.service.settings import Settings, SlackSettings, TokenSpec, UploadLimits, WebhookSpec, load_settings

__all__ = ["Settings", "SlackSettings", "TokenSpec", "UploadLimits", "WebhookSpec", "create_app", "load_settings"]
