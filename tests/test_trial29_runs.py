"""A new user's trial 29 (/work/trial29_inputs/REPORT.md): real gloo/CPU runs the tool got partly right, misled on or
got wrong at first contact, each read from the run's own bundle (``tests/fixtures/trial29``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.hang import HangRequest, analyze_hang
from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial29"


def test_two_ranks_in_different_collectives_are_the_jobs_code_paths_not_a_restart() -> None:
    """r10 (mp.spawn, output.log + 3 py-spy snapshots): only rank 0 called torch.distributed.checkpoint.save (a
    collective); rank 0 waits in its all_gather, rank 1 in the barrier after it. `diag hang` named "rank 1, stuck in
    barrier, as many ranks as the group in all_gather" and the diagnosis read category unknown, the platform, an L2
    restart that hangs again at the next save. One rank on each side names no rank from the stacks; the split itself is
    the job's code."""
    rep = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r10_dcp_save_rank0" / "dumps")))
    assert rep.hung and rep.suspects and rep.suspects[0].kind == "split_mismatch"
    assert "same_collective" not in {s.kind for s in rep.suspects}
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10_dcp_save_rank0"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "user_code"), d.root_cause.summary
    assert d.responsible.value == "user"
