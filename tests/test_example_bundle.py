"""The bundled real torchrun example (what `make demo` runs): root cause versus cascade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


@pytest.mark.parametrize("offset_s", [-8 * 3600, -30, 300, 8 * 3600])
def test_a_collectors_clock_apart_from_the_jobs_keeps_the_answer(tmp_path: Path, offset_s: int) -> None:
    """``kubectl logs --timestamps`` of the real example, the collector's UTC clock ``offset_s`` apart from the times the
    job writes itself (glog lines and torchelastic's failure table in the pod's local time, UTC+8 or a skewed node):
    every line is read by the collector's clock, so the order of the failures is the order the lines arrived."""
    import datetime as dt

    for f in sorted(EXAMPLE.glob("console_*.log")):
        t = dt.datetime(2026, 11, 29, 8, 58, 50, tzinfo=dt.UTC) + dt.timedelta(seconds=offset_s)
        lines = f.read_text().splitlines(keepends=True)
        (tmp_path / f.name).write_text("".join(
            (t + dt.timedelta(milliseconds=3 * i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ ") + line for i, line in enumerate(lines)))
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert (d.category, d.first_failing_rank) == (Category.USER_CODE, 3), d.findings
    one = tmp_path / "one"
    one.mkdir()
    (one / "pod.log").write_text((tmp_path / "console_node1.log").read_text())  # one pod's log, no node in its name
    d = diagnose(DiagnoseRequest(path=str(one), kb=False, llm=False))
    assert (d.category, d.first_failing_rank) == (Category.USER_CODE, 3), d.findings
