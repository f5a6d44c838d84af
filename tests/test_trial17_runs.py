"""A new user's fourth trial on real runs (trial 17, 22 gloo/CPU runs recorded on the lab host, after trial 16's fixes):
each test keeps one run's bundle (``tests/fixtures/trial17``) and what the user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial17"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_run_whose_loss_was_nan_to_the_end_did_not_recover() -> None:
    """r11 (torchrun --tee, a learning rate that makes the loss NaN from step 10, no guard): every step line says "loss
    nan" until "training complete ... final loss nan"; the answer was "The job recovered" (trial 16's rule read the
    NaN lines as a failure the run got past). Without a process that ended and a restart, nothing recovered."""
    d = _diagnose(FIX / "r11_nan_loss_bad_lr_no_guard")
    assert "recovered" not in d.root_cause.summary
    # (every rank's loss turned NaN: a batch is not singled out; the trial's truth is the learning rate, config; the
    # step lines' slowdown does not take the category over, and the hand-off stands)
    assert d.category.value in ("unknown", "config") and d.failure_mode.value == "fail_stop", d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_a_clean_ray_train_run_is_finished_not_recovered() -> None:
    """r20 (Ray Train, a clean run): Ray's routine warnings (the state API polled, a restartable actor's arguments) and
    the printed Result(error=None) made it "The job recovered: after this failure ..."."""
    d = _diagnose(FIX / "r20_clean_ray_control")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert "recovered" not in d.root_cause.summary


def test_ctrl_c_while_the_steps_still_came_is_no_hang() -> None:
    """r13 (SIGINT to torchrun mid-training): "someone stopped it, usually because it had stopped making progress",
    fail_hang, though the steps came until the interrupt."""
    d = _diagnose(FIX / "r13_sigint_to_launcher")
    assert d.failure_mode.value == "fail_stop", d.root_cause.summary
    assert d.root_cause.summary.startswith("The job was stopped while it ran")
    assert d.recovery is not None and d.recovery.rule_id == "interrupted_while_running"


def test_the_rank_waiting_inside_backward_is_no_compute_straggler() -> None:
    """r16 (torchrun --tee, rank 0 rewrites a growing metrics history every step outside the feed's phases; rank 1 waits
    for it inside backward's all-reduce, so rank 1's ``compute_s`` holds the wait and no record has ``comm_wait_s``): the
    answer named "Rank 1 ... a persistent compute straggler (4.85x)", the victim. Its compute excess is rank 0's time
    outside compute (the record's ``end - start`` minus its phases), so rank 1 is not named; rank 0 may be."""
    from diag_service.slow.analyze import analyze_slow, load_feed

    rep = analyze_slow(load_feed(FIX / "r16_heavy_per_step_metrics_timing" / "timing.jsonl.gz"))
    assert rep.failure_mode is not None and rep.failure_mode.value == "fail_slow"
    assert rep.job_slowdown, rep.summary
    assert {s.rank for s in rep.stragglers} <= {0}, rep.summary


def test_a_rank_that_returned_early_under_spawn_is_named_not_the_one_that_noticed() -> None:
    """r09 (torch.multiprocessing.spawn, stdin): rank 1 early-stopped and returned at step 45; rank 0's next collective
    failed with gloo's "Connection closed by peer" and spawn printed "-- Process 0 terminated with the following error:"
    and rank 0's traceback. The answer named rank 0 and "restart once". The quoted traceback is process 0's own (a lost
    peer), spawn terminated no process still alive, so rank 1 ended on its own with exit code 0."""
    d = _diagnose(FIX / "r09_early_stop_exit0_rank1_spawn")
    assert d.first_failing_rank == 1, d.root_cause.summary
    assert d.category.value == "user_code", d.root_cause.summary
    assert "exit code 0" in d.root_cause.summary


def test_spawn_terminating_a_live_rank_keeps_it_from_being_the_silent_one() -> None:
    """The same shape with spawn's "Terminating process P via signal SIGTERM" (zoo dev b18: rank 0 waited in a barrier
    only it entered, rank 1 in the next all-reduce; rank 0's barrier failed first): rank 1 was still alive when spawn
    ended it, so it is neither "ended with exit code 0" nor "died first"; spawn's report names rank 0."""
    d = _diagnose(Path(__file__).parents[1] / "eval" / "zoo" / "runs" / "b18_hang_rank0_barrier_branch_spawn")
    assert d.first_failing_rank == 0, d.root_cause.summary
    assert "exit code 0" not in d.root_cause.summary
