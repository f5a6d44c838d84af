"""Zoo batch 26's dev runs (real gloo/CPU runs recorded blind, ``eval/zoo/runs``) that first contact got wrong and a
general reading now gets right, and the table reading they taught on a written table."""

from __future__ import annotations

import json
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.logs import load_log_bundle

ZOO = Path(__file__).parents[1] / "eval" / "zoo"
DEV = set(json.loads((ZOO / "split.json").read_text())["dev"])


def _run(run: str):
    assert run in DEV
    return diagnose(DiagnoseRequest(path=str(ZOO / "runs" / run), kb=False, llm=False))


def test_a_progress_table_printed_once_with_its_header_is_read_for_step_times() -> None:
    """b26_slow_stopcont_table_r0: rank 0 throttled from step 280 (SIGSTOP/SIGCONT), the only progress a fixed-width
    table (``step | loss | lr | step_ms | tok/s`` once, then rows of numbers): the answer was an inferred hang (no step
    read). The header names the step and time columns; the rows are the steps."""
    d = _run("b26_slow_stopcont_table_r0")
    assert d.failure_mode.value == "fail_slow" and d.category.value == "infrastructure", d.root_cause.summary
    assert d.slow is not None and d.slow.job_slowdown and 240 <= d.slow.job_slowdown[0].start_step <= 300


def test_a_thread_count_that_rounds_to_zero_is_the_launch_configuration() -> None:
    """b26_cfg_nproc_threads_zero: ``--nproc-per-node 4`` on a 2-core node, each rank's ``cores // nproc`` threads is 0
    and torch raised ``set_num_threads expects a positive integer`` on every rank: unknown (0.25) before."""
    d = _run("b26_cfg_nproc_threads_zero")
    assert d.category.value == "config" and d.failure_mode.value == "fail_stop", d.root_cause.summary


def test_a_hang_culprit_still_running_in_the_jobs_own_code_is_the_jobs_code() -> None:
    """b26_hang_negsample_loop_accel_r1: rank 1's py-spy stacks change between dumps inside ``batches
    (train_matcher.py:34)`` (a sampling loop that never ends on its data) while rank 0 waits in backward: the culprit
    was named, the category unknown. A loop of the job's own that does not end on one rank is its code's (the label,
    data, is the loop's cause: arguable, and the finding says to check what ends the loop for this rank's data)."""
    d = _run("b26_hang_negsample_loop_accel_r1")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1
    assert d.category.value == "user_code", d.root_cause.summary
    assert "train_matcher.py:3" in d.root_cause.summary + " ".join(d.findings)


TABLE = """\
  iter |   loss |  time |  lr
-------------------------------
    10 |  2.301 | 0.210 | 1e-4
    20 |  2.250 | 0.205 | 1e-4
    30 |  2.201 | 0.212 | 1e-4
 iteration 40/ 100 | consumed samples: 640 | elapsed time per iteration (ms): 210.0 |
"""


def test_table_rows_take_the_unit_of_their_header_and_other_lines_are_not_rows(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(TABLE)
    feed = load_log_bundle(tmp_path)
    steps = sorted((int(s), round(float(t), 4)) for s, t in zip(feed.batch.step, feed.batch.step_time, strict=True))
    assert steps[:3] == [(10, 0.21), (20, 0.205), (30, 0.212)], steps
    assert (40, 0.21) in steps  # the Megatron line is its own format, not a row of the table


def test_a_header_without_a_time_column_opens_no_table(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("  step |   loss |  lr\n    10 |  2.301 | 1e-4\n    20 |  2.250 | 1e-4\n")
    assert len(load_log_bundle(tmp_path).batch) == 0
