"""Real runs from a new user's trial of the live mode (2026-12-05, `tests/fixtures/trial11/`): two torchrun agents on
one host as node0 and node1 (c10d rendezvous: node0's agent got global ranks 2-3), each with its console and its
`--log-dir` tree; every rank printed `node=nodeN` at init."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial11"


def test_the_same_error_on_every_rank_names_no_rank_and_no_node() -> None:
    """Every rank raised the same TypeError in its DataLoader at start; torchrun's table on node0 names rank 2 first.
    The summary had said "rank 2 on node node1" (the node of the earliest TypeError line, rank 1's), then "rank 2 on
    node node0". The cause is what the four ranks share: every rank is said, no rank or node singled out."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "same_error_every_rank"), kb=False, llm=False))
    assert d.category.value == "user_code" and d.first_failing_rank is None and not d.faulty_nodes
    assert "on every rank (4)" in d.root_cause.summary, d.root_cause.summary


def test_the_summary_models_facts_name_no_first_node_when_every_rank_raised_it() -> None:
    """The evidence pack's ``first_failing_node`` was the first evidence line's node (rank 1's, node1): the model then
    wrote "it failed on node node1". With no rank named and evidence on both nodes, no node is said."""
    from diag_service.llm.pack import build_evidence_pack

    d = diagnose(DiagnoseRequest(path=str(RUNS / "same_error_every_rank"), kb=False, llm=False))
    assert {e.node for e in d.root_cause.evidence} >= {"node0", "node1"}
    facts = build_evidence_pack(d).facts
    assert (facts["first_failing_rank"], facts["first_failing_node"]) == (None, None)
