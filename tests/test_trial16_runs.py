"""A new user's third trial on real runs (trial 16, 26 gloo/CPU runs recorded on the lab host): each test keeps one
run's bundle (``tests/fixtures/trial16``, the bundles as recorded, anonymised paths kept) and what the user found
wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial16"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_job_that_a_restart_carried_to_completion_is_not_restarted() -> None:
    """r19 (torchrun --max-restarts 1 --log-dir): attempt 0 fails at step 75 with a ConnectionResetError on both
    ranks, attempt 1 resumes from step 50 and logs "training finished: 200 steps". The answer was "storage, checkpoint
    I/O error" (a successful save line whose run directory holds the word "error") and a restart of the finished job."""
    d = _diagnose(FIX / "r19_transient_error_restart_succeeds_logdir")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert d.category.value != "storage" and "recovered" in d.root_cause.summary
    assert "attempt_1" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L0"
    assert all(h.signature_id != "checkpoint_io_error" for h in d.signature_hits)


def test_a_finished_clean_run_with_one_short_blip_in_its_feed_stays_finished() -> None:
    """r24 (mp.spawn, 600 steps, 9 s, timing.jsonl): one 11-step episode at 1.53x, 0.10 s lost, made the clean run
    "fail_slow, network, the platform acts". A finished run's short episodes costing a sliver of it are a finding."""
    d = _diagnose(FIX / "r24_clean_control_timing_spawn")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert any("the host's own drift" in f for f in d.findings), d.findings


def test_the_costliest_episodes_lead_the_slowdown_report() -> None:
    """r16 (rank 1 SIGSTOPped from about step 300): the report led with three noise episodes before the injection
    (0.05 s each) and left out the two that cost 13 s."""
    d = _diagnose(FIX / "r16_sigstop_straggler_rank1_timing")
    assert d.failure_mode.value == "fail_slow" and d.slow is not None
    assert d.slow.summary.startswith("The job ran 1.93x slower"), d.slow.summary
    assert "from step 386" in d.root_cause.summary and "smaller episode(s)" in d.slow.summary


def test_a_long_intermittent_episode_of_a_finished_run_is_still_its_slowdown() -> None:
    """r22 (rank 1 on node1 SIGSTOPped on and off from step 300 to 625): 1.17x on average over 320 steps, under 5 % of
    the run's time but far longer than the host's drift: it stays the run's verdict."""
    d = _diagnose(FIX / "r22_sigstop_straggler_node1_2agents_timing")
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary
    # its feed times backward and the all-reduce together, without comm_wait_s: every rank's communication rose
    # because one rank was stopped, which the feed cannot tell from a slow link; it read "network, the platform acts"
    assert d.category.value == "unknown" and d.slow is not None
    assert any("one rank late to each collective" in w for w in d.slow.input.warnings)


def test_a_bare_kill_at_start_up_says_what_to_check_before_the_hand_off() -> None:
    """r03 (rank 1 SIGKILLed right after init, torchrun --log-dir) and r04 (rank 0 at its first step): "Stop; a restart
    would fail the same way" for a kill nothing in the logs explains. The level stays the owner's (the public
    corpus's start-up kills are loading OOMs), but the plan says to read dmesg first and when a plain restart is
    right."""
    for run in ("r03_sigkill_init_rank1_logdir", "r04_sigkill_firststep_rank0_targz"):
        d = _diagnose(FIX / run)
        assert d.category.value == "host_oom" and d.trained is False, d.root_cause.summary
        assert d.recovery is not None and d.recovery.rule_id == "unconfirmed_kill_at_startup"
        assert "dmesg" in d.recovery.action and "restart the job as it is" in d.recovery.action


def test_a_global_step_printed_beside_the_epoch_is_not_offset_by_epochs() -> None:
    """r02 (mp.spawn, one file): the trainer prints ``epoch E step N/200`` with N the global step. Read as a counter
    restarting every epoch, the 137-step, 60-s run had a slowdown "from step 250 to step 720, costing 266.8s"."""
    d = _diagnose(FIX / "r02_exception_rank1_spawn")
    slow = next(f for f in d.findings if f.startswith("Step times in the logs"))
    steps = [int(x) for x in __import__("re").findall(r"step (\d+)", slow)]
    assert steps and max(steps) <= 137, slow


def test_a_hang_that_ray_train_already_ended_is_not_killed_again() -> None:
    """r12 (Ray Train, rank 1 spinning outside the collective): rank 0's gloo timeout was raised and Ray's controller
    failed the worker group ("ray.train.WorkerGroupError: Training failed due to worker errors"), yet the plan said
    "Kill the hung job (after taking stack dumps of every rank)". The driver's report of the failed run ends it."""
    d = _diagnose(FIX / "r12_busy_loop_rank1_ray")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    assert any(h.signature_id == "f_ray_train_failed" for h in d.signature_hits)
    assert d.recovery is not None and d.recovery.rule_id == "hang_ended_restart"
    # a Ray Train job's plan speaks of its driver, not of "every rank's launcher" (r09, r12 read torchrun's)
    assert d.recovery.platform == "ray" and any("driver" in c for c in d.recovery.commands), d.recovery.commands


def test_the_last_checkpoint_of_a_run_is_its_final_save() -> None:
    """r24 (and r01, r22): the run's final save comes after its last step line; with no failure line to bound the saves
    by, the last one the logs show is the last checkpoint (it read the save before it)."""
    d = _diagnose(FIX / "r24_clean_control_timing_spawn")
    saves = [int(m) for m in __import__("re").findall(
        r"saved checkpoint \S*step_0*(\d+)", (FIX / "r24_clean_control_timing_spawn" / "rank0.log").read_text())]
    assert d.last_checkpoint is not None and saves and d.last_checkpoint.step == max(saves), (d.last_checkpoint, saves)
    assert d.last_checkpoint.before_failure_s is None or d.last_checkpoint.before_failure_s >= 0


def test_a_rank_named_first_is_not_contradicted_by_the_tied_launcher_table() -> None:
    """r06 (accelerate launch; rank 1 SIGTERMed from outside at its first evaluation, the agent then SIGTERMs rank 0
    in the same second): the answer named rank 1 beside "one signal reached them all, so no rank or node is singled
    out"."""
    d = _diagnose(FIX / "r06_sigterm_in_eval_rank1_accelerate")
    assert d.first_failing_rank == 1 and d.category.value == "infrastructure", d.root_cause.summary
    assert not any("no rank or node is singled out" in f for f in d.findings), d.findings
    assert any("rank 1's own lines show it stopped first" in f for f in d.findings)


def test_a_lost_nodes_survivor_is_not_named_the_first_failing_rank() -> None:
    """r21 (two torchrun agents; node1's agent and worker SIGKILLed together): node1 is named lost, right, but rank 0
    on node0, the survivor whose connection reset, was the "first failing rank"."""
    d = _diagnose(FIX / "r21_node1_lost_sigkill_agent_2agents")
    assert d.category.value == "infrastructure" and d.faulty_nodes == ["node1"], d.root_cause.summary
    assert d.first_failing_rank != 0
    # its ranks' own logging records carry "[rank1]" after the time and level: heard, node1's rank is the lost one
    # (not "rank 1 ended with exit code 0": the lost-node reading comes first)
    assert d.first_failing_rank == 1 and "exit code 0" not in d.root_cause.summary
