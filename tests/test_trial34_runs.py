"""A new user's trial 34 (/work/trial34_inputs/REPORT.md): real gloo/CPU runs on two simulated nodes and public-thread
logs the tool misled on or got partly right at first contact, each read as the user gave it
(``tests/fixtures/trial34``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial34"


def _diagnose(name: str):
    return diagnose(DiagnoseRequest(path=str(RUNS / name), kb=False, llm=False))


def test_uneven_shards_of_one_coalesced_collective_are_no_mismatch() -> None:
    """p16 (DiffSynth, model parallel): every rank timed out in the same COALESCED all-gather at SeqNum 610, each with
    its own NumelIn (uneven shards, NumelOut = 8 x NumelIn). It read "Collective mismatch ... a rank-dependent code
    path must be fixed by the job owner"."""
    d = _diagnose("p16_train.log")
    assert d.failure_mode.value == "fail_hang"
    assert not any("Collective mismatch" in f for f in d.findings), d.findings
    assert d.recovery is not None and d.recovery.rule_id != "hang_code_path"


def test_the_rank_that_finished_its_loop_early_is_the_first_failing_rank() -> None:
    """r02 (two torchrun agents, 2 + 2): node 1's rank 3 ran out of its data shard and logged "training finished"
    while the others trained; their all-reduce lost it. The text said so, but the header named rank 2 (platform) and a
    bullet said rank 3 "died first ... killed by a signal, check dmesg"."""
    d = _diagnose("r02_bundle")
    assert d.first_failing_rank == 3, d.first_failing_rank
    assert d.category.value == "user_code" and d.responsible.value == "user"
    assert not any("killed by a signal" in f for f in d.findings), d.findings


def test_a_restart_that_died_on_the_cut_checkpoint_is_not_told_to_restart_as_it_is() -> None:
    """r04 (Slurm requeue): rank 0 was SIGKILLed while "saving checkpoint step 30 to latest.pt"; the requeued attempt
    failed loading that truncated file. The recovery said "restart from the last checkpoint as it is"."""
    d = _diagnose("r04_slurm.out")
    assert d.recovery is not None and d.recovery.rule_id == "restart_failed_on_checkpoint", d.recovery
    assert "previous complete checkpoint" in d.recovery.action


def test_an_illegal_instruction_is_not_called_an_illegal_memory_access() -> None:
    """p15 (JAX on GB200): CUDA_ERROR_ILLEGAL_INSTRUCTION read as "CUDA illegal memory access"."""
    d = _diagnose("p15_run.log")
    assert "cuda_illegal_instruction" in {h.signature_id for h in d.signature_hits}
    assert "illegal memory access" not in d.root_cause.summary


def test_a_later_attempt_in_torchruns_log_dir_is_a_restart_not_teardown() -> None:
    """r03 (torchrun --max-restarts 1 --log-dir): rank 2 was SIGKILLed in attempt_0; in attempt_1 rank 1 failed in
    gloo's connectFullMesh (connection refused). The second attempt's failure was "treated as teardown"."""
    d = _diagnose("r03_bundle")
    assert d.first_failing_rank == 2
    assert any("started again" in f and "Gloo could not connect its ranks" in f for f in d.findings), d.findings
    assert not any(f.startswith("Gloo could not connect") and "teardown" in f for f in d.findings)
