"""The real failure logs of ../shared/data/incidents_dev: every labelled case is a test.

Labels come from the public threads the logs were taken from (see that folder's README). We check
failure mode, category, the faulty rank where the label names one, and that our evidence quotes the
lines the label marks as carrying the signal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_service.domain import Category
from diag_service.pipeline import DiagnoseRequest, diagnose

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "incidents_dev"
pytestmark = pytest.mark.skipif(not (DEV / "labels.jsonl").exists(), reason=f"{DEV} not present (shared data absent)")


def _labels() -> list[dict]:
    if not (DEV / "labels.jsonl").exists():
        return []
    return [json.loads(line) for line in (DEV / "labels.jsonl").read_text().splitlines() if line.strip()]


LABELS = _labels()

#: Cases the catalogue answers otherwise on purpose, with the evidence for it. Strict: a case that starts passing
#: fails the run, so the list cannot go stale.
DISAGREE = {
    # "Duplicate GPU detected" alone: the maintainer blamed Ray's GPU assignment here, but NCCL files the message
    # under ncclInvalidUsage and 5 of the 8 public corpus dev threads with it were the launch's device mapping
    # (knowledge_base/signatures/nccl.yaml, nccl_duplicate_gpu): config
    "dev-003": "Duplicate GPU detected is config by the public corpus's dev threads (5 of 8), framework here",
}


def _param(case: dict) -> object:
    why = DISAGREE.get(case["id"])
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(case, id=case["id"], marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in LABELS])
def test_dev_case(case: dict) -> None:
    d = diagnose(DiagnoseRequest(path=str(DEV / "logs" / f"{case['id']}.log")))
    assert d.failure_mode.value == case["failure_mode"], d.root_cause.summary
    assert d.category.value == case["category"], d.root_cause.summary
    if case["faulty_rank"] is not None:
        assert d.first_failing_rank == case["faulty_rank"]
    quoted = " ".join(e.text for e in d.root_cause.evidence) + " " + " ".join(e.first.text for e in d.events)
    assert any(ev.split("\n")[0][:60] in quoted for ev in case["evidence"]), (case["evidence"], quoted[:500])
    if d.category is Category.UNKNOWN:
        assert d.confidence < 0.5
    else:
        assert d.root_cause.evidence, "a named category must come with evidence"


def test_dev_accuracy_and_unknown_calibration() -> None:
    """Category accuracy over the whole development set, and no confident answer where the label is unknown."""
    correct = 0
    for case in LABELS:
        d = diagnose(DiagnoseRequest(path=str(DEV / "logs" / f"{case['id']}.log")))
        correct += d.category.value == case["category"]
        if case["category"] == "unknown":
            assert d.confidence < 0.5, case["id"]
    assert correct / len(LABELS) >= 0.85
