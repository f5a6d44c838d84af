"""Confidence calibration (diag_service/calibrate, knowledge_base/calibration.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.calibrate import Calibration, CalibrationError, load_calibration
from diag_service.domain import Category
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


def test_an_answer_the_analyzers_decided_takes_their_constant_not_the_log_knots() -> None:
    """Zoo dev b5_hang_pyspy_abba_r1: the culprit comes from the stacks (user_code, rank 1, raw 0.45). The knots,
    fitted on log signatures, put raw 0.45 at 0.05 (a new user's trial: 'a correct hang answer shows 0.05');
    the shipped map's analyzers constant is fitted on the zoo's analyzer answers."""
    import shutil
    import tempfile

    cal = load_calibration()
    assert cal.analyzers is not None and 0.5 <= cal.analyzers <= 1.0
    root = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b5_hang_pyspy_abba_r1"
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job"
        shutil.copytree(root, job)
        raw = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False, calibration=None))
        d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert raw.category_source == "analyzers" and d.category is Category.USER_CODE
    assert d.confidence == cal.analyzers and cal.probability(raw.confidence, raw.category) < 0.1
    unset = Calibration(fitted_on="t", knots=[(1.0, 0.3)], unknown=0.1)
    raw.confidence = 0.45
    unset.apply(raw)  # without the constant, the knots as before
    assert raw.confidence == 0.3
