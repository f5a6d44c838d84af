"""Catalogue entries written from zoo dev runs (real torchrun runs recorded blind to the rules): each run reads as
its label says, through the entry that was written from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo"


def _dev() -> set[str]:
    s = json.loads((ZOO / "split.json").read_text())
    return set(s["dev"]) | {r for a in s.get("additions", []) for r in a["dev"]}


@pytest.mark.parametrize(("run", "category", "rank", "signature"), [
    # node 1's ephemeral port range used up by per-step metric posts: rank 1's urllib 'Cannot assign requested
    # address' (connect(2) EADDRNOTAVAIL); node 0's rank only loses its peer
    ("b10_net_ephemeral_ports_node1", "network", 1, "h_no_ephemeral_port"),
    # OneCycleLR sized for optimizer steps, stepped per micro-batch under gradient accumulation: both ranks raise at
    # the same step (the label names no rank; the first traceback's rank is not checked)
    ("b11_uc_onecycle_accum_steps", "user_code", -1, "onecycle_steps_exceeded"),
])
def test_a_zoo_dev_run_reads_as_labelled(run: str, category: str, rank: int | None, signature: str) -> None:
    assert run in _dev()
    d = diagnose(DiagnoseRequest(path=str(ZOO / "runs" / run), kb=False, llm=False))
    assert d.category.value == category, d.root_cause.summary
    assert rank == -1 or d.first_failing_rank == rank
    assert any(h.signature_id == signature for h in d.signature_hits)
