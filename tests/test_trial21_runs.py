"""A new user's eighth trial on real runs (trial 21, 23 gloo/CPU runs recorded on the lab host, after trial 20's fixes):
each test keeps one run's bundle (``tests/fixtures/trial21``, the run's own logs and dumps, not its README) and what the
user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial21"


def _diagnose(run: str):
    return diagnose(DiagnoseRequest(path=str(FIX / run), kb=False, llm=False))


def test_a_handled_traceback_before_both_ranks_finished_is_not_a_failure() -> None:
    """r19 (mp.spawn, stdin): rank 0 logs "metrics push failed; continuing without it" with a ConnectionRefusedError
    traceback at each evaluation, and both ranks log "training finished": the answer was fail_stop, "restart once"."""
    d = _diagnose("r19_handled_exception_spawn_stdin")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert d.root_cause.summary.startswith("The errors below were handled")
    assert d.recovery is not None and d.recovery.level.value == "L0"


def test_sigalrm_is_the_jobs_own_alarm() -> None:
    """r02 (torchrun --tee): rank 1 armed signal.alarm(9) as a prefetch watchdog and never cancelled it; torchrun's
    table says "exitcode: -14 ... (SIGALRM)". The answer was unknown, "Process terminated by the agent or scheduler
    (SIGTERM)" and an L2 restart that dies the same way."""
    d = _diagnose("r02_sigalrm_watchdog_rank1")
    assert (d.category.value, d.first_failing_rank) == ("user_code", 1), d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_a_rename_across_file_systems_is_the_jobs_save_code() -> None:
    """r03 (mp.spawn): an atomic checkpoint written in /dev/shm and os.rename'd onto the checkpoint volume:
    "OSError: [Errno 18] Invalid cross-device link"; the answer was unknown and "restart once"."""
    d = _diagnose("r03_exdev_ckpt_rename_spawn")
    assert (d.category.value, d.first_failing_rank) == ("user_code", 0), d.root_cause.summary
    assert "rename" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_static_graph_error_does_not_advise_find_unused_parameters() -> None:
    """r07 (accelerate): DDP(static_graph=True) with a layer dropped every other step: "... not compatible with
    static_graph set to True"; the answer advised "Pass find_unused_parameters=True"."""
    d = _diagnose("r07_static_graph_layerdrop_accel")
    assert d.category.value == "user_code"
    assert "static_graph" in d.root_cause.summary.split(". ")[0], d.root_cause.summary


def test_a_full_state_dict_loaded_into_a_dtensor_model_is_not_a_shape_mismatch() -> None:
    """r08 (torchrun --tee, stdin): a full checkpoint loaded into a fully_shard model with load_state_dict: equal
    shapes, "aten.copy_.default got mixed torch.Tensor and DTensor"; the answer was "a checkpoint from another
    architecture"."""
    d = _diagnose("r08_fsdp2_resume_full_sd")
    assert d.category.value == "user_code"
    assert "DTensor" in d.root_cause.summary and "set_model_state_dict" in d.root_cause.summary, d.root_cause.summary


def test_a_hang_culprit_blocked_writing_its_log_is_the_log_pipe() -> None:
    """r10 (per-rank shell launcher, 3 snapshots): rank 1's log shipper was SIGSTOPped, its stdout pipe filled and it
    blocked in StreamHandler.emit; rank 0 timed out. The culprit was named, category unknown, L2 restart."""
    d = _diagnose("r10_log_shipper_stalls_rank1_shell")
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_hang", "infrastructure", 1)
    assert "pipe" in d.root_cause.summary


def test_a_data_worker_failing_after_object_store_throttling_is_storage() -> None:
    """r15 (Ray Train): 142 "503 SlowDown: Please reduce your request rate." warnings on rank 1, then its DataLoader
    worker's "GET ... failed after 8 attempts"; the answer was data, "validate that sample"."""
    d = _diagnose("r15_objstore_throttle_rank1_ray")
    assert (d.category.value, d.first_failing_rank) == ("storage", 1), d.root_cause.summary


def test_a_hang_culprit_waiting_on_its_dataloader_deep_in_multiprocessing_names_the_loader() -> None:
    """r21 (--log-dir tree, 3 snapshots): rank 1's DataLoader worker backtracks in a regex; rank 1 waits in
    Connection._recv ten frames under _MultiProcessingDataLoaderIter._try_get_data, which the six frames kept did not
    reach: "DataLoader" appeared nowhere in the answer."""
    d = _diagnose("r21_regex_backtrack_rank1_logdir")
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1)
    assert "DataLoader workers" in d.root_cause.summary, d.root_cause.summary


def test_the_jobs_source_code_in_a_bundle_is_not_read_as_its_output(tmp_path: Path) -> None:
    """A run folder holds the training script beside its log (trial 16's and 18's run folders): the script's `raise`
    and log-call lines read as errors and completions it only names. Source files are skipped, with a warning."""
    (tmp_path / "train.py").write_text(
        'raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")\nlog.info("training complete")\n')
    (tmp_path / "train.log").write_text("".join(f"step {i} loss 0.5\n" for i in range(1, 50)) + "training complete\n")
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.failure_mode.value == "none" and d.category.value == "unknown", d.root_cause.summary
    assert any("train.py: source code, not a log: skipped" in w for w in d.input.warnings), d.input.warnings


def test_two_ranks_in_one_collective_called_from_two_lines_of_the_job_are_an_order_mismatch() -> None:
    """r22 (mp.spawn, 3 snapshots): rank 0 all_reduces on a metrics group first, rank 1 on the default group first;
    each waits in all_reduce, at tagger.py:277 and :278. The answer was "stuck in all_reduce, as many ranks as the group
    in all_reduce", unknown, restart."""
    d = _diagnose("r22_pg_order_deadlock_spawn")
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "user_code"), d.root_cause.summary
    assert "different orders" in d.root_cause.summary


def test_every_rank_flagged_alike_is_no_straggler_and_a_clear_one_stays() -> None:
    """r16 (timing feed): the job re-pinned to fewer cores; both ranks were named intermittent data stragglers (5.53x,
    5.38x; 1.1 s and 0.8 s lost), category storage. r23 (two nodes, timing feed): rank 1's object-store throttling
    (35 s lost) beside rank 0's two slow reads (0.5 s), and both were named. When every rank is flagged with one kind,
    only the ones that stand out (more than EVERYONE_SPREAD times the rest) stay stragglers."""
    from diag_service.slow.analyze import analyze_slow

    r16 = analyze_slow(FIX / "r16_cpuset_shrink_jobwide_timing" / "timing.jsonl.gz")
    assert r16.stragglers == [] and r16.category.value != "storage", r16.summary
    r23 = analyze_slow(FIX / "r23_objstore_throttle_rank1_2node_timing" / "timing.jsonl.gz")
    assert [(s.rank, s.kind.value) for s in r23.stragglers] == [(1, "data")], r23.summary
