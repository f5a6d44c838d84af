"""A new user's trial 30 (/work/trial30_inputs/REPORT.md): real gloo/CPU runs the tool got partly right, misled on or
got wrong at first contact, each read from the run's own bundle (``tests/fixtures/trial30``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial30"


def test_a_node_whose_log_ends_with_its_completion_was_not_lost() -> None:
    """r14 (two agents; node0.log, node1.log, timing.jsonl): both ranks finished ("training finished: 300 steps"),
    then node1's agent lost the store in torchrun's exit barrier (node0's agent had already left). It read "Node node0
    was lost: its logs end without an error". A node whose log ends with the run's own completion report finished."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r14_anomaly_debug_node1"), kb=False, llm=False))
    assert d.faulty_nodes == [] and "was lost" not in d.root_cause.summary, d.root_cause.summary
    assert "Training had completed" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L0"


def test_a_store_key_the_jobs_own_code_waits_on_is_its_code_not_the_launch() -> None:
    """r13 (accelerate, stdin): after 60 good steps rank 1's store.get("eval_60") timed out (rank 0 set "eval/60"):
    "DistStoreError: wait timeout ..., keys: /default_pg/0//eval_60". It read "c10d store timeout ... Most often the
    launch itself: MASTER_ADDR/MASTER_PORT, the node rank or world size". The call is the job's own, past the launch.
    Zoo dev b8_hang_store_key_typo (store.wait(["vocab_ready"]) that no rank answered) reads the same."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_train.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "user_code"), d.root_cause.summary
    assert "MASTER_ADDR" not in d.root_cause.summary


def test_the_one_rank_dumped_outside_any_collective_is_the_culprit_when_the_logs_show_the_hang() -> None:
    """r12 (two agents, .tar.gz with node logs and three py-spy snapshots of rank 1 only, rank 0 already gone): rank 1
    blocked opening a FIFO nobody wrote; rank 0 timed out in its all-reduce. `diag hang` and the diagnosis said "Every
    rank waits at the same place, so the stacks do not name a culprit: look for a rank whose ... GPU/network failed".
    The dumped rank sits outside any collective while the logs show its peer waiting in one: it is the one waited
    for."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r12_bundle.tar.gz"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    assert "Every rank waits at the same place" not in d.root_cause.summary


def test_np_load_of_a_file_that_is_no_array_file_is_the_data() -> None:
    """r07 (two agents x 2, .tar.gz): node1's shard_3.npz is an un-pulled git-lfs pointer; np.load takes it for a pickle
    and refuses it ("This file contains pickled (object) data ... allow_pickle="). It read "A library refused a value
    it was given ... Usually a configuration" error. numpy's own load documents the fallback: the file is no .npy/.npz."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r07_bundle.tar.gz"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("data", 3), d.root_cause.summary
    assert "git-lfs" in d.root_cause.summary


def test_spawns_terminated_processes_count_the_ranks_so_the_one_that_never_entered_is_named() -> None:
    """r11 (mp.spawn, one file): rank 0 deadlocked on two of its own locks at step 50; rank 1 timed out in its recv,
    and spawn reported process 1 and terminated process 4836 (rank 0). The script's own "[ecgnet r0]" prefix is no rank
    the tool reads, so only rank 1 was seen and no rank was named. Spawn's report plus one terminated process is a job
    of two: rank 1 alone timed out, rank 0 never entered the collective (zoo dev b30_hang_rank1_frozen_spawn_r1 too)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r11_output.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 0, d.root_cause.summary
