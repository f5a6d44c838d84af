"""A new user's fourth trial on real runs (trial 17, 22 gloo/CPU runs recorded on the lab host, after trial 16's fixes):
each test keeps one run's bundle (``tests/fixtures/trial17``) and what the user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial17"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_run_whose_loss_was_nan_to_the_end_did_not_recover() -> None:
    """r11 (torchrun --tee, a learning rate that makes the loss NaN from step 10, no guard): every step line says "loss
    nan" until "training complete ... final loss nan"; the answer was "The job recovered" (trial 16's rule read the
    NaN lines as a failure the run got past). Without a process that ended and a restart, nothing recovered."""
    d = _diagnose(FIX / "r11_nan_loss_bad_lr_no_guard")
    assert "recovered" not in d.root_cause.summary
    assert d.category.value == "data" and d.failure_mode.value == "fail_stop", d.root_cause.summary


def test_a_clean_ray_train_run_is_finished_not_recovered() -> None:
    """r20 (Ray Train, a clean run): Ray's routine warnings (the state API polled, a restartable actor's arguments) and
    the printed Result(error=None) made it "The job recovered: after this failure ..."."""
    d = _diagnose(FIX / "r20_clean_ray_control")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert "recovered" not in d.root_cause.summary


def test_ctrl_c_while_the_steps_still_came_is_no_hang() -> None:
    """r13 (SIGINT to torchrun mid-training): "someone stopped it, usually because it had stopped making progress",
    fail_hang, though the steps came until the interrupt."""
    d = _diagnose(FIX / "r13_sigint_to_launcher")
    assert d.failure_mode.value == "fail_stop", d.root_cause.summary
    assert d.root_cause.summary.startswith("The job was stopped while it ran")
    assert d.recovery is not None and d.recovery.rule_id == "interrupted_while_running"
