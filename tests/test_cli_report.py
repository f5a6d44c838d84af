"""The human report of ``diag diagnose`` says what its ``--json`` says (new-user trials, 2026-12-03)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from diag_service.cli import app

#: A Ray worker's death as Ray 0.8 printed it (public corpus dev case cl-005, ray-project/ray#7773).
RAY_WORKER_DIED = (
    "2020-03-28 18:22:59,901\tWARNING worker.py:1072 -- A worker died or was killed while executing task "
    "ffffffffffffffffeb124b350200.\n"
    "(pid=81331) E0328 18:23:00.165781 81395 core_worker.cc:382] Raylet failed. Shutting down.\n"
    "(pid=81331) Traceback (most recent call last):\n"
    '(pid=81331)   File "python/ray/_raylet.pyx", line 442, in ray._raylet.execute_task\n'
)


def _run(*args: str) -> str:
    res = CliRunner().invoke(app, [*args, "--no-kb", "--no-llm"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_weak_signature_hit_is_named_in_the_report_not_denied(tmp_path: Path) -> None:
    log = tmp_path / "ray.log"
    log.write_text(RAY_WORKER_DIED)
    d = json.loads(_run("diagnose", str(log), "--json"))
    assert d["category"] == "unknown" and d["signature_hits"], d["root_cause"]["summary"]
    text = _run("diagnose", str(log))
    assert "No known failure signature matched" not in text
    assert "matched weakly" in text
    for h in d["signature_hits"]:
        assert h["name"] in text


def test_diag_slow_on_a_clean_feed_reads_as_no_slowdown_without_a_category(tmp_path: Path) -> None:
    # the lab's slow_rank_compute run before its fault's onset step (69): a clean feed of real timings
    src = Path(__file__).parent / "fixtures" / "slow" / "lab_slow_rank_compute"
    onset = json.loads((src / "truth.json").read_text())["onset_step"]
    lines = [ln for ln in (src / "timing.jsonl").read_text().splitlines() if json.loads(ln)["step"] < onset - 4]
    feed = tmp_path / "timing.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    rep = json.loads(CliRunner().invoke(app, ["slow", str(feed), "--json"]).stdout)
    assert rep["failure_mode"] is None and rep["category"] == "unknown"
    res = CliRunner().invoke(app, ["slow", str(feed)], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    head = res.stdout.splitlines()[0]
    assert "no slowdown" in head.lower() and "category" not in head, head


def test_dash_reads_standard_input() -> None:
    """``kubectl logs POD | diag diagnose -``: the bundled real example's two node consoles piped in."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    logs = b"".join(p.read_bytes() for p in sorted((root / "examples" / "torchrun_shape_mismatch_2x2").glob("console_*.log")))
    code = "import sys; from diag_service.cli.main import app; sys.argv = ['diag', *sys.argv[1:]]; app()"
    r = subprocess.run([sys.executable, "-c", code, "diagnose", "-", "--json", "--no-kb", "--no-llm", "--platform", "kubernetes"],
                       input=logs, capture_output=True, timeout=300, cwd=root)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    d = json.loads(r.stdout)
    assert d["job_id"] == "stdin" and d["category"] == "user_code" and d["first_failing_rank"] == 3
    # a dry-run command never names the pipe as the job (a new user's trial: job-name=stdin)
    commands = d["recovery"]["commands"]
    assert any("JOB_NAME" in c for c in commands) and not any("stdin" in c for c in commands if not c.startswith("#"))


def test_events_option_bounds_the_event_table(tmp_path: Path) -> None:
    """``--events 0`` prints no event table (it drew an empty one); a cut table says how much it shows."""
    log = tmp_path / "ray.log"
    log.write_text(RAY_WORKER_DIED)
    n = len(json.loads(_run("diagnose", str(log), "--json"))["events"])
    assert n >= 2
    assert "Events (deduplicated" not in _run("diagnose", str(log), "--events", "0")
    assert f"{n} templates, the first 1 shown" in _run("diagnose", str(log), "--events", "1")
    assert f"Events (deduplicated, {n} templates)" in _run("diagnose", str(log))


def test_a_fallback_summary_says_why_in_a_phrase_not_the_internal_error() -> None:
    """The demo's first screen showed 'deterministic fallback (invalid answer (1 attempt(s)): the sentence that states
    the first failure was dropped (not in the cited log lines ...' (a new user's trial, 2026-12-05)."""
    from diag_service.cli.report import _fallback_why

    long = ("invalid answer (1 attempt(s)): the sentence that states the first failure was dropped (not in the cited log "
            "lines (loading, weights): Rank 3 on node node1 failed first with RuntimeError ... while loading weights")
    assert _fallback_why(long) == "the model's wording added a claim the cited log lines do not show, so it was not used"
    assert _fallback_why("backend unavailable: OSError: no model") == "the local model is unavailable"
    assert _fallback_why("disabled") == "no model asked"
    assert len(_fallback_why("x" * 500)) <= 80


def test_empty_per_rank_files_are_one_line_of_the_report_and_each_in_the_json() -> None:
    # the bundled example: torchrun --log-dir wrote four empty stdout.log files (the ranks print to stderr)
    example = Path(__file__).resolve().parents[1] / "examples" / "torchrun_shape_mismatch_2x2"
    text = _run("diagnose", str(example))
    lines = [ln for ln in text.splitlines() if ln.startswith("input warning:")]
    assert len(lines) == 1 and "4 empty files (0 bytes): " in lines[0] and "and 1 more" in lines[0], lines
    d = json.loads(_run("diagnose", str(example), "--json"))
    assert sum(w.endswith(": empty (0 bytes)") for w in d["input"]["warnings"]) == 4
