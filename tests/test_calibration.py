"""Confidence calibration (diag_service/calibrate, knowledge_base/calibration.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.calibrate import Calibration, CalibrationError, UnknownCell, load_calibration
from diag_service.domain import Category, FailureMode
from diag_service.pipeline import DiagnoseRequest, diagnose


def test_shipped_map_is_monotone_and_fitted() -> None:
    cal = load_calibration()
    assert "dev split" in cal.fitted_on
    probs = [cal.probability(x / 20, Category.NETWORK) for x in range(21)]
    assert probs == sorted(probs) and 0 < probs[0] < probs[-1] <= 1
    assert cal.probability(0.9, Category.UNKNOWN) <= cal.unknown


def test_non_monotone_map_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("fitted_on: x\nknots: [[0.5, 0.8], [1.0, 0.3]]\nunknown: 0.2\n")
    with pytest.raises(CalibrationError):
        load_calibration(p)


def test_pipeline_reports_calibrated_confidence(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    raw = diagnose(DiagnoseRequest(path=str(log), calibration=None))
    ident = Calibration(fitted_on="test", knots=[(0.5, 0.1), (1.0, 0.2)], unknown=0.05)
    d = diagnose(DiagnoseRequest(path=str(log), calibration=ident))
    assert raw.category == d.category == Category.GPU_HARDWARE
    assert raw.confidence > 0.5 and d.confidence == 0.2


def test_answers_the_analyzers_decided_are_not_put_on_the_log_knots() -> None:
    """The knots, fitted on log signatures, put raw 0.45 at 0.05 (a new user's trial: "a correct hang answer shows
    0.05"). A slowdown's category from step times takes the analyzers' constant (fitted on the zoo's dev slowdowns);
    a hang culprit's category from stacks keeps its own bounded score, under 0.5: the stacks say where, not why.
    Zoo dev runs: b5_slow_epochstep_stopcont_r2 (rank 2 throttled, tutorial step lines) and b5_hang_pyspy_abba_r1."""
    import shutil
    import tempfile

    cal = load_calibration()
    # the constant is the zoo dev runs' first-contact rate (6 of 15 at the fit of 2026-12-05, 0.41), not a score
    assert cal.analyzers is not None and 0.0 < cal.analyzers <= 1.0
    runs = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs"
    out = {}
    for run in ("b5_slow_epochstep_stopcont_r2", "b5_hang_pyspy_abba_r1"):
        with tempfile.TemporaryDirectory() as tmp:
            job = Path(tmp) / "job"
            shutil.copytree(runs / run, job)
            raw = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False, calibration=None))
            out[run] = (raw, diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False)))
    raw, d = out["b5_slow_epochstep_stopcont_r2"]
    assert d.category_source == "analyzers" and d.failure_mode.value == "fail_slow"
    # not what the log knots state for the same raw score (0.29 at the fit of 2026-12-05 (second), 0.05 before)
    assert d.confidence == cal.analyzers and cal.probability(raw.confidence, raw.category) != cal.analyzers
    raw, d = out["b5_hang_pyspy_abba_r1"]
    assert d.category_source == "analyzers" and d.failure_mode.value == "fail_hang"
    assert d.confidence == raw.confidence and 0.3 <= d.confidence < 0.5


def test_unknown_answers_take_their_situations_measured_probability(tmp_path: Path) -> None:
    """An ``unknown`` answer's confidence is the measured share of such answers that were right in its situation
    (first contact on the corpus dev split: a hang known only from watchdog timeouts was unknowable in 26 of 37,
    a failure no signature explains in 16 of 111), never as high as a confident claim."""
    cal = load_calibration()
    hang = tmp_path / "train.log"
    hang.write_text("".join(
        f"[rank{r}]:[E1205 10:00:00.{r}23456 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        f"60001{r} milliseconds before timing out.\n" for r in (1, 0)))
    stop = tmp_path / "stop.log"
    stop.write_text("Traceback (most recent call last):\n  File \"/opt/venv/lib/python3.11/site-packages/foo/run.py\", "
                    "line 3, in main\nfoo.errors.FooError: something went wrong\n")
    d_hang = diagnose(DiagnoseRequest(path=str(hang), kb=False, llm=False))
    d_stop = diagnose(DiagnoseRequest(path=str(stop), kb=False, llm=False))
    assert d_hang.category is Category.UNKNOWN and d_hang.failure_mode is FailureMode.FAIL_HANG
    assert d_hang.confidence > cal.unknown and d_hang.confidence < 0.5
    assert d_hang.confidence > d_stop.confidence
    with pytest.raises(ValueError):
        UnknownCell(failure_mode=FailureMode.FAIL_HANG, raw=0.3, probability=0.7, cases=37)
