"""A `diag` command imports only what it uses (issue 21): the cold start of `diag --help` or of a diagnosis
without the knowledge base and the model is not spent importing the HTTP service, torch, Ray or models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
#: Imported only by the commands that need them: the service, the lab, batch labelling, the knowledge base,
#: the summary model, the ETPR tables, the MCP server.
HEAVY = ("fastapi", "uvicorn", "starlette", "torch", "transformers", "sentence_transformers", "faiss", "ray", "mcp",
         "xllamacpp", "llama_cpp", "slack_bolt", "polars", "sqlalchemy")


def _imported(body: str) -> list[str]:
    code = (
        "import contextlib, io, json, sys\n"
        + body
        + f"\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_help_imports_no_subcommand() -> None:
    body = (
        "from diag_service.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        app(['--help'], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'etpr' in out.getvalue() and 'lab' in out.getvalue(), out.getvalue()\n"
        "assert 'pydantic' not in sys.modules and 'numpy' not in sys.modules\n"
    )
    assert _imported(body) == []


def test_diagnose_without_kb_and_model_imports_none_of_the_heavy_parts() -> None:
    body = (
        "from diag_service.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    app(['diagnose', {str(EXAMPLE)!r}, '--no-kb', '--no-llm', '--json'], standalone_mode=False)\n"
        "assert json.loads(out.getvalue())['category'] == 'user_code'\n"
    )
    assert _imported(body) == []


def test_a_lazy_subcommand_is_imported_when_run() -> None:
    body = (
        "from diag_service.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        app(['etpr', '--help'], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    assert "polars" in _imported(body)  # the ETPR tables are polars frames


def test_sub_apps_show_their_own_usage() -> None:
    # diag slow / diag etpr are single commands (a callback-only app), diag kb a group mounted under diag:
    # neither shows a group's "COMMAND [ARGS]" without sub-commands nor a top-level --install-completion.
    from typer.testing import CliRunner

    from diag_service.cli import app

    runner = CliRunner()
    for sub, arg in (("slow", "TIMING_FEED"), ("etpr", "EVENTS")):
        out = runner.invoke(app, [sub, "--help"], prog_name="diag", terminal_width=200).output
        usage = next(line for line in out.splitlines() if "Usage:" in line)
        assert f"diag {sub} [OPTIONS]" in usage and "COMMAND" not in usage, usage
        assert arg.lower() in usage.lower()
    kb = runner.invoke(app, ["kb", "--help"], terminal_width=200).output
    assert "search" in kb and "--install-completion" not in kb


def test_lab_help_and_list_import_neither_torch_nor_the_runner() -> None:
    # the lab is an extra: its help and its scenario list work on a core install
    body = (
        "from diag_service.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    for args in (['lab', '--help'], ['lab', 'list']):\n"
        "        try:\n"
        "            app(args, standalone_mode=False)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "assert 'suite' in out.getvalue() and 'slow_control_clean' in out.getvalue(), out.getvalue()\n"
        "assert 'diag_service.lab.runner' not in sys.modules and 'psutil' not in sys.modules\n"
    )
    assert "torch" not in _imported(body)


def test_only_the_top_level_diag_offers_shell_completion() -> None:
    """A new user's trial: ``diag slow --help`` listed ``--install-completion`` (the one-command apps mounted lazily were
    built as apps of their own). Run as a user runs it (a process; the test runner hides completion options)."""
    def help_of(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "diag_service.cli", *args, "--help"], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "COLUMNS": "200"}).stdout

    assert "--install-completion" in help_of()
    for sub in ("slow", "etpr", "hang", "kb"):
        assert "--install-completion" not in help_of(sub), sub
