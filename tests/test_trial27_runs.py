"""A new user's trial 27 (/work/trial27_inputs/REPORT.md): real gloo/CPU runs the tool got partly right or wrong at
first contact, each read from the run's own bundle (``tests/fixtures/trial27``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial27"


def test_a_resumed_attempts_own_failure_after_a_preemption_is_the_cause() -> None:
    """r06 (two torchrun agents, both attempts' node logs): attempt 1 was preempted (SIGTERM to both agents) after its
    step-150 save on node0's local disk; attempt 2 resumed ("resumed at step 150" on node0) and rank 1 on node1 found
    no checkpoint (FileNotFoundError). It read the preemption as the cause (infrastructure, rank 0, node0, "restart
    once") and the resume's error "6 s after an earlier failure: treated as its consequence". A stop from outside is
    not a failure a restart meets again; the resumed attempt's own error is."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank, d.faulty_nodes) == ("storage", 1, ["node1"]), d.root_cause.summary
    assert "latest.pt" in d.root_cause.evidence[0].text
    assert any("stopped from outside" in f and "resumed from its checkpoint" in f for f in d.findings), d.findings


def test_the_c10d_stores_loss_after_another_nodes_worker_exit_is_teardown_not_the_cause() -> None:
    """r21 (two torchrun agents, .zip with node logs and py-spy snapshots): rank 1's DataLoader workers deadlock on a
    lock held across fork; rank 0 (node0) times out in its all-reduce after 45 s and its agent exits at 19:42:08.011,
    taking the c10d store with it; node1's agent loses the store 25 ms later. It read "c10d store lost while the job
    ran on node node1 ... check the node", infrastructure, platform. The store went with node0's agent, after node0's
    worker failed: a hang, rank 1 (the stacks' culprit), and not the platform's."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r21.zip"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert d.category.value != "infrastructure" and "c10d store lost" not in d.root_cause.summary
    assert any("took the c10d store it hosted with it" in f for f in d.findings), d.findings


def test_the_exited_ranks_own_error_line_leads_when_no_message_is_catalogued() -> None:
    """r08 (torchrun --log-dir tree + launcher.log): rank 1's trainer logs "ERROR ... data validation failed at step
    23: 72.5% of targets outside [-50, 50] in shard chunk_001.npy.gz; aborting worker" and exits 3 without a
    traceback; rank 0 reads "Connection reset by peer". It answered "Suspected: Connection reset" and put the ERROR
    line third. The launcher names rank 1 first; its own last error line is its reason, and rank 0's reset noticed it."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r08"), kb=False, llm=False))
    assert d.first_failing_rank == 1 and d.category.value == "unknown"
    assert "data validation failed" in d.root_cause.evidence[0].text and d.root_cause.evidence[0].rank == 1
    assert "Suspected: Connection reset" not in d.root_cause.summary
    assert any("logged or raised an error of its own before it" in f for f in d.findings), d.findings


def test_a_rank_that_skipped_a_collective_after_its_own_error_is_the_one_out_of_step() -> None:
    """r10 (two agents x 2 ranks, .tar.gz): rank 3's evaluation raised a shape error, a try/except logged "WARNING ...
    eval failed at step 120, skipping evaluation on this rank: ..." and skipped the eval all-reduce; gloo aborted rank 2
    ("Received data size doesn't match expected size"). It named rank 2, the rank that only received the surprise."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10.tar.gz"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("user_code", 3), d.root_cause.summary
    assert "skipping evaluation on this rank" in d.root_cause.summary
    # the launcher's SIGTERM (its table says 19:31:16, a whole second) came 0.13 s after the abort, not before it
    assert "Preceded by" not in d.root_cause.summary


def test_a_hung_ranks_last_lines_are_its_latest_by_time_in_rays_reordered_output() -> None:
    """r13 (Ray Train driver log): rank 1 fetched a feature table from a server that never answers; Ray printed the
    worker's buffered earlier lines ("epoch 1 start", "eval step 100", 19:33:54.165-.318) after its real last line
    ("refreshing item-feature table from feature server ...", 19:33:54.477). It quoted the reprinted lines as what the
    rank was doing last."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_driver.log"), kb=False, llm=False))
    told = next(f for f in d.findings if "Rank 1's last lines of its own" in f)
    assert told.rstrip(".\"'").endswith("refreshing item-feature table from feature server 127.0.0.1:29914"), told


def test_one_snapshot_folder_of_rank_dumps_is_read_by_diag_hang() -> None:
    """r12's extra run: `diag hang dumps/snap1` (the folder py-spy wrote each rank's dump into) was refused with
    "no parseable stack dump or Flight Recorder dump under .../snap1"; it needed the parent folder. One snapshot is
    too few to call a hang by itself, and with the logs' timeout it places the spinning rank."""
    from diag_service.hang.analyzer import HangRequest, analyze_hang

    alone = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r12" / "dumps" / "snap1")))
    assert not alone.hung and "Not enough snapshots (1)" in alone.explanation
    placed = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r12" / "dumps" / "snap1"), hung_from_logs=True))
    assert [s.rank for s in placed.suspects][:1] == [1], placed.explanation


def test_a_slowdown_that_starts_as_the_job_announces_new_settings_is_config() -> None:
    """r17 (mp.spawn, stdin): `curriculum_ctx: 2048` (meant 256) makes every step 15-20x slower from step 151, and the
    job logged "curriculum: context 64 -> 2048 from step 151". It quoted that line as what the log said at the onset,
    then answered infrastructure, responsible platform ("check the straggler node's GPUs, links and neighbours")."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r17_stdin.txt"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.responsible.value) == ("fail_slow", "config", "user")
    assert "context 64 -> 2048" in d.root_cause.summary


def test_a_handled_shard_read_error_is_not_called_a_checkpoint_error() -> None:
    """r20 (FSDP2, stdin): rank 1's "shard prefetch failed (OSError(5, 'Input/output error')), retry 1/3" and it
    finished. The decision (nothing to restart) was right, but the error was named a "Checkpoint save/load I/O error"
    with "resume from the last complete checkpoint"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r20_stdin.txt"), kb=False, llm=False))
    assert d.failure_mode.value == "none" and "Checkpoint save/load" not in d.root_cause.summary
    assert "dataset shard" in d.root_cause.summary
