"""Real runs from a new user's trial of the live mode (2026-12-05, `tests/fixtures/trial11/`): two torchrun agents on
one host as node0 and node1 (c10d rendezvous: node0's agent got global ranks 2-3), each with its console and its
`--log-dir` tree; every rank printed `node=nodeN` at init."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial11"


def test_the_node_said_with_the_first_failing_rank_is_that_ranks_own() -> None:
    """Every rank raised the same TypeError in its DataLoader at start; torchrun's table on node0 names rank 2 first.
    The summary said "rank 2 on node node1": the node of the earliest TypeError line, rank 1's on node1."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "same_error_every_rank"), kb=False, llm=False))
    assert d.category.value == "user_code" and d.first_failing_rank == 2
    assert "on rank 2 on node node0" in d.root_cause.summary, d.root_cause.summary


def test_the_summary_models_facts_put_the_first_failing_rank_on_its_own_node() -> None:
    """The evidence pack's ``first_failing_node`` was the first evidence line's node, here rank 1's (node1): the model
    then wrote "rank 2 on node node1". It is rank 2's own line's node (a fresh-clone trial saw the same on a hang)."""
    from diag_service.llm.pack import build_evidence_pack

    d = diagnose(DiagnoseRequest(path=str(RUNS / "same_error_every_rank"), kb=False, llm=False))
    # the first evidence line is the named rank's own since trial 13 (it was rank 1's, the earliest copy)
    assert d.root_cause.evidence[0].rank == 2 and d.first_failing_rank == 2
    assert any(e.rank == 1 for e in d.root_cause.evidence)
    facts = build_evidence_pack(d).facts
    assert (facts["first_failing_rank"], facts["first_failing_node"]) == (2, "node0")
