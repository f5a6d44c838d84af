"""Real runs of a new user's trial (trial 12: gloo/CPU DDP jobs on two simulated nodes, Ray Train), each the input of
an answer the trial found wrong; the fixtures are the runs' logs as the tool read them (``tests/fixtures/trial12``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial12"


def _diagnose(name: str):
    return diagnose(DiagnoseRequest(path=str(FIX / name), kb=False, llm=False))


def test_rays_dashboard_skipping_optional_modules_is_not_the_failure() -> None:
    """A Ray session folder (every file of /tmp/ray/session_*/logs): the dashboard's INFO lines about optional modules
    it could not import ("No module named 'opentelemetry.exporter'") were the answer at 0.79 (config, "missing
    module"); the worker's own IndexError (targets out of range) is the failure."""
    d = _diagnose("r11_ray_session")
    assert d.category.value == "data", d.root_cause.summary
    assert "IndexError: Target 10 is out of bounds" in d.root_cause.evidence[0].text
    assert any(h.signature_id == "import_error" and h.role.value == "context" for h in d.signature_hits)


def test_an_agents_lost_store_after_rank_0_raised_is_its_consequence() -> None:
    """Rank 0 (node0, which hosts the c10d store in its agent) raised KeyError; node0's agent exited, and node1's
    agent lost the store 2 s later (RendezvousConnectionError: "Did the remote server shutdown or crash?"). The
    agent's report names no rank, and was the answer (config, "check MASTER_ADDR/PORT"); the rank's own error is."""
    d = _diagnose("r17_rank0_keyerror")
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.first_failing_rank == 0
    assert "KeyError" in d.root_cause.evidence[0].text
