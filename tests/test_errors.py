"""One error model: every deliberate error is a DiagError, and its kind alone decides the exit code of
every command and the HTTP status of the service."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import diag_service
from diag_service.cli import app
from diag_service.errors import EXIT_CODES, HTTP_STATUSES, DiagError, ErrorKind, http_status

#: Exceptions that are not errors of the tool: a BaseException the label worker raises inside a job
#: on purpose so that the job's own ``except Exception`` cannot swallow the timeout.
NOT_ERRORS = {"diag_service.label.worker.JobTimeout"}


def test_every_exception_class_of_the_package_is_a_diag_error() -> None:
    found, outside = [], []
    for m in pkgutil.walk_packages(diag_service.__path__, "diag_service."):
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.__name__:
                found.append(obj)
                if not issubclass(obj, DiagError) and f"{mod.__name__}.{name}" not in NOT_ERRORS:
                    outside.append(f"{mod.__name__}.{name}")
    assert len(found) > 30
    assert outside == []
    assert {c.kind for c in found if issubclass(c, DiagError)} == set(ErrorKind)


def test_each_kind_has_one_exit_code_and_one_status() -> None:
    assert set(EXIT_CODES) == set(HTTP_STATUSES) == set(ErrorKind)
    assert len(set(EXIT_CODES.values())) == len(ErrorKind)  # no code means two things
    from diag_service.service.uploads import Refused

    assert http_status(Refused(413, "too big", "size")) == 413  # a refusal keeps its own status
    from diag_service.service.context import NotFound

    assert http_status(NotFound("no such job")) == 404


def _bad_catalog(tmp_path: Path) -> Path:
    d = tmp_path / "sigs"
    d.mkdir()
    (d / "bad.yaml").write_text("version: 1\nsignatures:\n  - id: x\n    patterns: ['(unclosed']\n")
    return d


def test_the_cli_exit_code_is_the_kind_of_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    # input: a bundle that does not exist
    res = runner.invoke(app, ["diagnose", str(tmp_path / "nope"), "--no-kb", "--no-llm"])
    assert res.exit_code == EXIT_CODES[ErrorKind.INPUT] and "error:" in res.output
    # config: a broken site catalogue on the search path, for every command that loads it
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(_bad_catalog(tmp_path)))
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    res = runner.invoke(app, ["diagnose", str(log), "--no-kb", "--no-llm"])
    assert res.exit_code == EXIT_CODES[ErrorKind.CONFIG] and "configuration error:" in res.output and "bad.yaml" in res.output
    res = runner.invoke(app, ["signatures"])
    assert res.exit_code == EXIT_CODES[ErrorKind.CONFIG]
    monkeypatch.delenv("DIAG_SIGNATURES_PATH")
    # refused: executing a plan with the executor off
    res = runner.invoke(app, ["diagnose", str(log), "--no-kb", "--no-llm", "--json"])
    assert res.exit_code == 0
    plan = tmp_path / "d.json"
    plan.write_text(res.stdout)
    monkeypatch.delenv("DIAG_EXECUTOR", raising=False)
    res = runner.invoke(app, ["recover", str(plan), "--execute"])
    assert res.exit_code == EXIT_CODES[ErrorKind.REFUSED] and "refused:" in res.output
    # input again: a platform the policy does not know is the user's mistake, not a broken policy
    res = runner.invoke(app, ["recover", str(plan), "--platform", "mesos"])
    assert res.exit_code == EXIT_CODES[ErrorKind.INPUT] and "unknown platform" in res.output
    # input: a file that is not a diagnosis
    plan.write_text(json.dumps({"hello": 1}))
    res = runner.invoke(app, ["recover", str(plan)])
    assert res.exit_code == EXIT_CODES[ErrorKind.INPUT] and "not a diagnosis" in res.output
