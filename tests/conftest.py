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


_ROOT = Path(__file__).resolve().parents[1]


def _corpus_dev_ids() -> set[str]:
    import json

    split = json.loads((_ROOT / "eval" / "corpus" / "split.json").read_text())
    return set(split["dev"]).union(*(a["dev"] for a in split["additions"]))


@pytest.fixture
def corpus_dev_case() -> Callable[[str], Diagnosis]:
    """Diagnose one public corpus case by id (no KB, no LLM); refuses a case of the frozen test split."""
    dev = _corpus_dev_ids()

    def run(cid: str) -> Diagnosis:
        assert cid in dev, f"{cid} is not a dev case"
        log = _ROOT / "eval" / "corpus" / "logs" / f"{cid}.log"
        return diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))

    return run

