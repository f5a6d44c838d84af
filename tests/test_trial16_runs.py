"""A new user's third trial on real runs (trial 16, 26 gloo/CPU runs recorded on the lab host): each test keeps one
run's bundle (``tests/fixtures/trial16``, the bundles as recorded, anonymised paths kept) and what the user found
wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial16"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_job_that_a_restart_carried_to_completion_is_not_restarted() -> None:
    """r19 (torchrun --max-restarts 1 --log-dir): attempt 0 fails at step 75 with a ConnectionResetError on both
    ranks, attempt 1 resumes from step 50 and logs "training finished: 200 steps". The answer was "storage, checkpoint
    I/O error" (a successful save line whose run directory holds the word "error") and a restart of the finished job."""
    d = _diagnose(FIX / "r19_transient_error_restart_succeeds_logdir")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert d.category.value != "storage" and "recovered" in d.root_cause.summary
    assert "attempt_1" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L0"
    assert all(h.signature_id != "checkpoint_io_error" for h in d.signature_hits)
