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


def test_hang_etpr_kb_and_serve_raise_and_the_one_handler_sets_code_and_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``diag hang`` had its own ``except ValueError`` and ``typer.Exit(2)``, ``diag etpr`` and ``diag kb search``
    printed their own message and exited: the exit code and the one-line message now come from the one
    handler (clitools), which is what a recorder of its ``err`` console sees."""
    import diag_service.clitools as clitools
    from diag_service.etpr.cli import etpr_command
    from diag_service.hang.analyzer import HangInputError
    from diag_service.hang.cli import hang_cmd

    handled: list[str] = []
    real_print = clitools.err.print
    monkeypatch.setattr(clitools.err, "print", lambda msg, **kw: (handled.append(msg), real_print(msg, **kw)))
    runner = CliRunner()
    empty = tmp_path / "dumps"
    empty.mkdir()
    events = tmp_path / "events.jsonl"
    events.write_text('{"job": "j1", "t": 0, "kind": "job_start", "gpus": 8}\n')
    cases = [
        (["hang", str(tmp_path / "nope")], "no such dumps folder"),
        (["hang", str(empty)], "no parseable stack dump"),
        (["etpr", str(events), "--by", "colour"], "--by must be one of"),
        (["etpr", str(events), "--slow-tolerance", "1.5"], "--slow-tolerance must be in [0, 1)"),
        (["kb", "search"], "give either TEXT or --from-diagnosis"),
    ]
    for argv, message in cases:
        handled.clear()
        res = runner.invoke(app, argv)
        assert res.exit_code == EXIT_CODES[ErrorKind.INPUT], (argv, res.output)
        assert len(handled) == 1 and handled[0].startswith("[red]error:[/red]") and message in handled[0], (argv, handled)
        assert f"error: {message}" in res.output
    # the commands themselves raise the error root; they choose no exit code
    with pytest.raises(HangInputError):
        hang_cmd(dumps=tmp_path / "nope")
    with pytest.raises(DiagError, match="--by must be one of"):
        etpr_command(events=events, by="colour")
    # a usage error of hang's option is click's (exit 2), not a traceback out of the request model
    res = runner.invoke(app, ["hang", str(empty), "--min-stuck", "0"])
    assert res.exit_code == 2 and "min-stuck" in res.output


def test_no_command_picks_its_own_exit_code() -> None:
    """Commands raise DiagError kinds; only the handler (clitools) turns them into exit codes. Two exits
    remain on purpose: ``diag watch`` ends with its child's own exit code, and ``diag label`` interrupted
    (Ctrl-C) ends with 1 after saying how to resume."""
    allowed = {"clitools.py": 1, "live/cli.py": 1, "label/cli.py": 1}
    root = Path(diag_service.__file__).parent
    found = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("lab/"):  # the lab's training script is run by torchrun, not by diag
            continue
        text = path.read_text(encoding="utf-8")
        n = text.count("typer.Exit(") + text.count("sys.exit(")
        if n:
            found[rel] = n
    assert found == allowed


def test_a_missing_optional_package_names_the_extra_that_brings_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a core install has no uvicorn: `diag serve` says which extra to install instead of a traceback
    import sys

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # an import of it now fails as for a missing package
    r = CliRunner().invoke(app, ["serve", "--data-dir", str(tmp_path / "data")])
    assert r.exit_code == EXIT_CODES[ErrorKind.UNAVAILABLE], r.output
    assert "needs the package 'uvicorn'" in r.output and "diag-service[service]" in r.output
    assert "Traceback" not in r.output


def test_the_cli_uses_the_click_that_typer_runs() -> None:
    # typer >= 0.29 carries its own click and does not install click: a usage error raised with another
    # click's class would not be handled by typer (and `import click` fails on a core install)
    import typer

    from diag_service import clitools

    if hasattr(typer, "_click"):
        assert clitools.click is typer._click


def test_watch_without_its_extra_starts_no_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a core install has no psutil: `diag watch -- CMD` must say so before it starts CMD, not leave it running
    import sys

    monkeypatch.setitem(sys.modules, "psutil", None)
    marker = tmp_path / "started"
    r = CliRunner().invoke(app, ["watch", "--job-id", "j1", "--state-dir", str(tmp_path / "state"), "--",
                                 sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"])
    assert r.exit_code == EXIT_CODES[ErrorKind.UNAVAILABLE], r.output
    assert "needs the package 'psutil'" in r.output
    import time

    time.sleep(1.0)  # a started child would have written the marker by now
    assert not marker.exists()


def test_with_json_an_error_is_also_one_json_object_on_stdout(tmp_path: Path) -> None:
    """A script running ``diag ... --json | jq`` gets JSON on failure too: the HTTP API's error body
    (``detail``, ``kind``) plus the exit code, for a command of the top-level group (diagnose, recover) and
    for a mounted one (slow, hang, etpr); without ``--json`` stdout stays empty."""
    runner = CliRunner()
    nope = str(tmp_path / "nope")
    events = tmp_path / "events.jsonl"
    events.write_text('{"job": "j1", "t": 0, "kind": "job_start", "gpus": 8}\n')
    for argv in (["diagnose", nope, "--no-kb", "--no-llm", "--json"], ["recover", nope, "--json"],
                 ["slow", nope, "--json"], ["hang", nope, "--json"],
                 ["etpr", str(events), "--by", "colour", "--json"]):
        res = runner.invoke(app, argv)
        assert res.exit_code == EXIT_CODES[ErrorKind.INPUT], (argv, res.output)
        body = json.loads(res.stdout)
        assert body["kind"] == "input" and body["exit_code"] == 2 and body["detail"], (argv, body)
        assert "error:" in res.stderr
    res = runner.invoke(app, ["diagnose", nope, "--no-kb", "--no-llm"])
    assert res.exit_code == 2 and res.stdout == "" and "error:" in res.stderr
    # a "--json" after "--" is an argument, not the option
    res = runner.invoke(app, ["diagnose", "--no-kb", "--no-llm", "--", nope])
    assert res.stdout == ""
