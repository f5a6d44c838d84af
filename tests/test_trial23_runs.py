"""A new user's trial 23 (/work/trial23_inputs/REPORT.md): real gloo/CPU runs the tool got partly right or misleading at
first contact, each read from the run's own bundle (``tests/fixtures/trial23``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial23"


def _diag(name: str):
    return diagnose(DiagnoseRequest(path=str(RUNS / name), kb=False, llm=False))


def test_a_sigint_to_one_rank_while_it_trained_is_a_stop_of_that_rank_not_a_stalled_job() -> None:
    """r06 (torchrun --tee, .zip): ``kill -INT`` to rank 1 only, 0.3 s after its last step line; torchrun's table: rank 1
    exitcode -2 (SIGINT), rank 0 -15. Read: fail_hang, "someone stopped it, usually because it had stopped making
    progress", no rank. The KeyboardInterrupt traceback has no time of its own; the agent's stamped report of the
    SIGINT exit does."""
    d = _diag("r06_sigint_rank1.zip")
    assert d.failure_mode.value == "fail_stop" and d.first_failing_rank == 1, d.root_cause.summary
    assert "while it was still making progress" in d.root_cause.summary


def test_a_field_of_the_input_that_does_not_convert_to_a_number_is_data() -> None:
    """r02 (mp.spawn, stdin): rank 1 parses a CSV row whose numeric column holds 'n/a' in the job's own code:
    ``ValueError: could not convert string to float: 'n/a'``. Read: user_code. A value the job read from its
    environment or command line stays the job's configuration (the context rule's counter-examples)."""
    d = _diag("r02_csv_na_spawn.log")
    assert d.category.value == "data" and d.first_failing_rank == 1, d.root_cause.summary


def test_what_the_log_said_as_a_slowdown_began_is_told() -> None:
    """r14 (mp.spawn, one file): rank 1 starts a busy Python thread at step 500 and every step slows (GIL); its line
    "online-metrics thread started" at the onset was ignored and the slowdown put on the platform's nodes. A line of a
    kind the job had not printed before, within two readings of the onset, is told with the slowdown (the category is
    not changed by it)."""
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(RUNS / "r14_metrics_thread_rank1.txt")
    assert rep.job_slowdown and "online-metrics thread started" in rep.summary, rep.summary
