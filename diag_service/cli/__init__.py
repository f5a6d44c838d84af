"""Command-line interface (``diag``): a thin layer over :mod:`diag_service.pipeline`."""

from diag_service.cli.main import app

__all__ = ["app"]
