"""The bundled real torchrun example (what `make demo` runs): root cause versus cascade."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from diag_service.cli import app
from diag_service.domain import Category, EventRole, FailureMode
from diag_service.pipeline import DiagnoseRequest, diagnose

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torchrun_shape_mismatch_2x2"


def test_real_torchrun_example_root_vs_cascade() -> None:
    d = diagnose(DiagnoseRequest(path=str(EXAMPLE)))
    assert d.failure_mode is FailureMode.FAIL_STOP
    assert d.category is Category.USER_CODE
    assert d.responsible.value == "user"
    assert d.first_failing_rank == 3
    assert "shapes cannot be multiplied" in d.root_cause.evidence[0].text
    assert d.root_cause.evidence[0].rank == 3
    roots = [e for e in d.events if e.role is EventRole.ROOT]
    assert all("shapes cannot be multiplied" in e.template for e in roots)
    # The other ranks' gloo connection errors are reported as cascade, not as the cause.
    cascade = [e for e in d.events if "Connection closed by peer" in e.first.text]
    assert cascade and all(e.role is EventRole.SYMPTOM for e in cascade)
    assert set(cascade[0].ranks) == {0, 1, 2}
    assert set(d.timings_ms) >= {"ingest", "extract", "redact", "templates", "signatures", "localize", "total"}
    assert "torchrun_logdir" in d.input.layouts


def test_cli_json_and_report() -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["diagnose", str(EXAMPLE), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == "1.1"
    assert doc["category"] == "user_code" and doc["first_failing_rank"] == 3
    res = runner.invoke(app, ["diagnose", str(EXAMPLE)])
    assert res.exit_code == 0
    assert "user_code" in res.stdout and "first failing rank 3" in res.stdout


def test_cli_missing_path_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["diagnose", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert "no such file" in res.output.lower()


def test_schema_export_matches_committed_file() -> None:
    from diag_service.domain import Diagnosis

    committed = Path(__file__).resolve().parents[1] / "docs" / "schema" / "diagnosis.schema.json"
    assert json.loads(committed.read_text()) == Diagnosis.model_json_schema(), "run `make schema`"
