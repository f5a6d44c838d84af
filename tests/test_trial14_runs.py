"""Real runs of a new user's trial (trial 14: gloo/CPU DDP jobs), each the input of an answer the trial found wrong or
misleading; the fixtures are the runs' bundles as the user handed them over (``tests/fixtures/trial14``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial14"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_every_rank_blocked_in_recv_from_the_other_is_the_jobs_wait_cycle_not_the_network(tmp_path: Path) -> None:
    """r02: both ranks call dist.recv(src=peer) before their send at step 35; gloo times both out in recv. The
    answer was "network, restart, cordon if it repeats" (the rule for every rank waiting in one collective). A
    point-to-point recv is not a collective: every rank receiving from a peer that is itself receiving is a cycle
    of the job's own send/recv order (user_code, L4), from the logs alone and with the py-spy dumps."""
    d = _diagnose(FIX / "r02_sendrecv_deadlock")
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.category.value == "user_code", d.root_cause.summary
    assert "point-to-point recv" in d.root_cause.summary and "train_a.py:83" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FIX / "r02_sendrecv_deadlock" / "console.log", logs / "console.log")
    d = _diagnose(logs)
    assert d.category.value == "user_code", d.root_cause.summary


def test_a_crash_at_shutdown_after_the_run_reported_completion_is_not_restarted(tmp_path: Path) -> None:
    """r18: Lightning printed "`Trainer.fit` stopped: `max_epochs=2` reached.", then rank 1 aborted at exit
    ("terminate called without an active exception", SIGABRT) and torchrun reported the job FAILED. The answer
    was "restart from the last checkpoint" with 30 minutes of training assumed lost. The failure came after the
    run's own report of completion: nothing to re-run (L0), the shutdown crash goes to the owner. With an error of
    a rank's own written before the completion line, the failure is an ordinary one."""
    d = _diagnose(FIX / "r18_completed_then_abort")
    assert d.failure_mode.value == "fail_stop"
    assert "Training had completed before this failure" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id == "failed_after_completion"
    assert d.recovery.level.value == "L0"
    text = (FIX / "r18_completed_then_abort" / "console.log").read_text()
    mark = "`Trainer.fit` stopped: `max_epochs=2` reached.\n"
    earlier = ("Traceback (most recent call last):\n  File \"/work/trial14_inputs/_scripts/train_d.py\", line 88, in "
               "<module>\n    main()\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert mark in text
    (tmp_path / "console.log").write_text(text.replace(mark, earlier + mark, 1))
    d = _diagnose(tmp_path)
    assert "Training had completed" not in d.root_cause.summary, d.root_cause.summary
    assert d.recovery is None or d.recovery.rule_id != "failed_after_completion"


def test_a_rank_that_returned_early_with_exit_0_is_named_not_the_peer_it_left_waiting() -> None:
    """r03 (torchrun --log-dir, two ranks): rank 1 logs "reached max_steps for this shard (40), stopping" and exits 0
    while rank 0 is in the next all-reduce; rank 0 gets "Connection closed by peer" and torchrun's report lists rank
    0 alone. The answer named rank 0 (the victim), category unknown, restart once. In a job of two whose ranks'
    own output are both in the logs, the one that reports no loss and no error is the rank its peer lost; the
    report leaving it out means it exited 0: the job's code let it leave the loop early."""
    d = _diagnose(FIX / "r03_early_return_logdir")
    assert d.first_failing_rank == 1, d.root_cause.summary
    assert d.category.value == "user_code"
    assert "it ended with exit code 0 while its peers still waited on it" in d.root_cause.summary


def test_save_lines_that_state_their_own_growing_durations_are_a_storage_slowdown(tmp_path: Path) -> None:
    """r17 (torchrun --log-dir + --tee): rank 0's "saved checkpoint /tmp/t14_ckpt/step_000040.pt in 0.12s" grew to
    7.68 s, 24 of the run's 28 s; its step lines' step_time leaves the save out, so the test that reads saves from the
    step readings saw nothing and the run read "No failure". The durations the save lines state are compared with
    each other; the same saves at a steady 0.12 s are no slowdown."""
    d = _diagnose(FIX / "r17_slow_ckpt_writes_logdir")
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary
    assert d.category.value == "storage"
    assert "Checkpoint saves got slower" in d.root_cause.summary
    steady = tmp_path / "steady"
    shutil.copytree(FIX / "r17_slow_ckpt_writes_logdir", steady)
    for f in steady.rglob("*.log"):
        f.write_text(re.sub(r"(saved checkpoint \S+ in )[0-9.]+s", r"\g<1>0.12s", f.read_text()))
    d = _diagnose(steady)
    assert "Checkpoint saves got slower" not in d.root_cause.summary, d.root_cause.summary


def test_two_ranks_waiting_in_different_collectives_are_the_jobs_path_not_an_absent_rank() -> None:
    """Zoo dev run b18_hang_uneven_parts_accel_r0 (recorded blind after trial 14's r06): rank 0's data ran out and it
    waits in an end-of-epoch barrier; rank 1 is still in backward's all-reduce. Only rank 0 timed out, so the
    two-rank rule said "rank 1 never entered it", but rank 1's own "Connection closed by peer" was raised inside
    the all-reduce: both waited, in different collectives. The job's code took a rank-dependent path (user_code);
    which rank left the common path is not in the reports (zoo dev b7_hang_data_skip_r0 is the other direction)."""
    run = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b18_hang_uneven_parts_accel_r0"
    d = _diagnose(run)
    assert d.failure_mode.value == "fail_hang" and d.category.value == "user_code", d.root_cause.summary
    assert "never entered" not in d.root_cause.summary
    assert "wait in different collectives" in d.root_cause.summary and d.first_failing_rank is None
