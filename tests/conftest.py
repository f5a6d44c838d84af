"""Shared helpers for the input-side tests (realistic bundles live in ``tests/bundles.py``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import bundles`, whatever the import mode

from pg import postgres_server, postgres_url  # noqa: E402, F401 - the PostgreSQL fixtures (tests/pg.py)

from diag_service.cli import app  # noqa: E402
from diag_service.domain import Diagnosis  # noqa: E402
from diag_service.ingest import IngestLimits  # noqa: E402
from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402


def run_diagnose(path: Path | str, **limits: int | float) -> Diagnosis:
    """``diagnose()`` on ``path``; keyword arguments override :class:`IngestLimits` fields."""
    return diagnose(DiagnoseRequest(path=str(path), limits=IngestLimits(**limits) if limits else None))  # type: ignore[arg-type]


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def diag() -> Callable[..., Diagnosis]:
    return run_diagnose
