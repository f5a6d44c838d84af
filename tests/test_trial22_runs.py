"""A new user's trial 22 (/work/trial22_inputs/REPORT.md): real gloo/CPU runs the tool got wrong or misleading at first
contact, each read from the run's own bundle (``tests/fixtures/trial22``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.analyze import analyze_slow

RUNS = Path(__file__).parent / "fixtures" / "trial22"


def _diag(name: str):
    return diagnose(DiagnoseRequest(path=str(RUNS / name), kb=False, llm=False))


def test_a_rank_whose_timeout_fires_a_minute_after_its_peers_was_late_not_the_network() -> None:
    """r13: rank 1 (node1) frozen 65 s by the cgroup freezer; rank 0 timed out at 14:13:29, rank 1 at 14:14:34 in the
    same collective, called from the same line. Read: "the connection between the ranks failed" (network). A rank that
    times out a minute after its peer entered the collective a minute late: it is the one its peer waited for."""
    d = _diag("r13.tar.gz")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    assert d.category.value != "network"
    assert any("ended 65 s after its peers'" in f for f in d.findings), d.findings


def test_a_thread_that_died_before_a_hang_is_the_cause_and_the_job_hung() -> None:
    """r12: rank 0's prefetch thread died on a KeyError ("Exception in thread prefetch:"), rank 0 blocked on the empty
    queue and rank 1 timed out 46 s later. Read: fail_stop, "exc=KeyError on rank 1" (the rank spawn reported)."""
    d = _diag("r12_stdin.log")
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.first_failing_rank != 1
    assert "A thread of the job died first" in d.root_cause.summary and "KeyError" in d.root_cause.summary


def test_a_segfault_whose_faulthandler_frames_end_in_the_jobs_own_call_is_the_jobs_code() -> None:
    """r06: the job's ctypes call segfaults on rank 1 at step 150 (faulthandler: ctypes' string_at under the job's
    train()); torchrun's table roots the failure at rank 0's later SIGABRT. Read: unknown, "restart once"."""
    d = _diag("r06.tar.gz")
    assert d.category.value == "user_code" and d.first_failing_rank == 1, d.root_cause.summary


def test_time_a_rank_spends_between_its_timed_steps_is_what_its_peers_wait_for() -> None:
    """r16 (the first 300 steps of its feed): rank 0 runs gc.collect() between steps, outside its timed record; rank 1
    waits for it inside backward, so rank 1's compute_s grows. Read: "Rank 1 ... persistent compute straggler (10x)",
    gpu_hardware. The gap between a rank's records is its own work: rank 1 is not a straggler."""
    rep = analyze_slow(RUNS / "r16_timing.jsonl")
    assert rep.failure_mode.value == "fail_slow"
    assert not any(s.rank == 1 for s in rep.stragglers), rep.stragglers
    assert rep.category.value != "gpu_hardware"


def test_a_nan_batch_one_rank_skipped_on_its_own_is_the_jobs_code_and_that_rank() -> None:
    """r22 (torchrun --tee, py-spy dumps): rank 2 logged "[default2]: ... non-finite loss nan at step 420, skipping
    batch", skipped that backward alone, and ended in the final barrier while ranks 0 and 1 waited in their last
    gradient all-reduce. Read: "NaN or Inf loss on rank 0 ... Training diverged" (data; the line carries only the local
    rank, before rank 2's first "[rank2]:" line)."""
    d = _diag("r22_skip_batch_dir")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 2, d.root_cause.summary
    assert d.category.value == "user_code" and "diverged" not in d.root_cause.summary


def test_open_files_exhausted_in_the_jobs_own_open_is_the_jobs_code_not_the_loaders_sharing() -> None:
    """r03 (--log-dir tree): the Dataset opens its shard in every __getitem__ and keeps the handles, num_workers=0,
    ``ulimit -n 1024``: ``OSError: [Errno 24] Too many open files`` in the job's own frame. Read: config, "DataLoader
    workers pass tensors through file descriptors ... Raise the limit" (no worker in the run)."""
    d = _diag("r03_fd_leak_dir")
    assert d.category.value == "user_code", d.root_cause.summary
    assert "DataLoader workers pass tensors" not in d.root_cause.summary


def test_a_clean_ray_runs_routine_warnings_are_not_handled_errors() -> None:
    """r19 (a clean Ray Train run with evaluation and checkpoints, driver.log): the raylet's "over 95% full" disk
    warning (this shared host's disk) and Ray Train's routine state-API warnings were told as "errors ... handled".
    They are warnings of a healthy run: the run finished, nothing failed."""
    d = _diag("r19_clean_ray_driver.log")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert not any("were handled" in f for f in d.findings), d.findings


def test_a_log_slowdown_whose_last_readings_are_back_at_the_baseline_has_ended() -> None:
    """r15 (mp.spawn, one file, a reading every 50 steps): a co-tenant's burners for 15 s took steps from 4 to 24 ms;
    the last 9 readings (450 steps) are back at 3.3-5 ms. Read: "2.93x ... from step 1600 (ongoing)": the streaming
    detector closes an episode after 10 readings back at the baseline, 500 steps of this log."""
    rep = analyze_slow(RUNS / "r15_jobwide_cotenant.log")
    ep = rep.job_slowdown[0]
    assert not ep.ongoing and ep.end_step is not None and 2400 <= ep.end_step <= 2700, ep
    assert ep.slowdown_factor > 3.0 and "still slow at the last step read" not in rep.summary
