"""A new user's trial 24 (/work/trial24_inputs/REPORT.md): real gloo/CPU runs the tool got partly right at first
contact, each read from the run's own bundle (``tests/fixtures/trial24``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial24"


def test_a_rendezvous_every_node_timed_out_in_alone_is_the_launch_configuration() -> None:
    """r08 (two torchrun agents, per-node files): node1 launched with a mistyped --rdzv-endpoint port; both agents
    timed out in the rendezvous. Read: framework, "who acts: the platform", though its own words said the launch
    commands disagree. When every node of the logs waited alone, the commands disagree: config, the job's owner."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r08_node1_wrong_port"), kb=False, llm=False))
    assert d.category.value == "config" and d.responsible.value == "user", d.root_cause.summary
    assert "launch commands most likely disagree" in d.root_cause.summary
