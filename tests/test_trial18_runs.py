"""A new user's fifth trial on real runs (trial 18, 20 gloo/CPU runs recorded on the lab host): each test keeps one run's
bundle (``tests/fixtures/trial18``) and what the user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial18"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_stray_nul_byte_does_not_hide_a_ranks_stderr() -> None:
    """r02 (torchrun --log-dir): rank 1's DataLoader worker died of SIGBUS (its memory-mapped shard was truncated);
    PyTorch writes "Unexpected bus error encountered in worker" with its terminating NUL byte, and the whole
    stderr.log, the one file with the cause, was skipped as "binary content". The answer was unknown, "restart once"."""
    d = _diagnose(FIX / "r02_sigbus_memmap_trunc")
    assert not [w for w in d.input.warnings if "binary" in w], d.input.warnings
    assert any("NUL byte(s) removed" in w for w in d.input.warnings), d.input.warnings
    assert d.category.value == "storage" and d.first_failing_rank == 1, d.root_cause.summary
    assert "memory-mapped" in d.root_cause.summary


def test_epoch_and_a_global_step_counter_keep_every_reading() -> None:
    """r15 (mp.spawn, one file): ``epoch E step S/1200 ... 64.3 ms/step`` lines, S global; the job's CPU quota was cut
    to 0.25 CPU in steps, a 5x slowdown. The first epoch's lines were read as steps 1220-1320 (epoch x total + S), so
    every later line was "a redraw": 6 readings of 120, "No failure in these logs"."""
    from diag_service.slow.analyze import load_feed

    feed = load_feed(FIX / "r15_cpu_quota_ramp_job" / "job.out")
    steps = sorted(set(feed.batch.step.tolist()))
    assert len(steps) >= 50 and max(steps) <= 1200, steps[:5]
    d = _diagnose(FIX / "r15_cpu_quota_ramp_job" / "job.out")
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary


def test_a_finished_runs_last_long_interval_is_no_collapse() -> None:
    """r16 (a clean run, per-rank files and a timing feed): its last logged interval held the planned final 4 s
    evaluation, and the answer was fail_slow, "Throughput collapsed about 49x before the job ended", against the feed's
    own "no slowdown". r14 (rank 0's synchronous upload every 40 steps) read the same words for its last pause."""
    d = _diagnose(FIX / "r16_clean_eval_pause_perrank")
    assert d.failure_mode.value == "none", d.root_cause.summary
    d = _diagnose(FIX / "r14_periodic_sync_upload" / "console.log")
    assert "collapsed" not in d.root_cause.summary
    assert d.slow is not None and all(e.end_step is None or e.end_step <= 400 for e in d.slow.job_slowdown)


def test_evaluation_passes_of_constant_length_are_the_runs_rhythm_and_growing_ones_a_slowdown() -> None:
    """The evaluation lines' own durations: trial 18's r16 states a 4 s evaluation every 150 steps, the same each
    time (a clean run); trial 15's r08 states rank 1's evaluation growing from 0.02 s to 0.28 s ("eval at step N done
    in 0.22s", lines the user saw unused). Only the growth is a slowdown, the job's own."""
    from diag_service.slow.analyze import analyze_slow, load_feed

    clean = analyze_slow(load_feed(FIX / "r16_clean_eval_pause_perrank" / "rank0.log"))
    assert "Periodic passes" not in clean.summary
    grown = analyze_slow(load_feed(FIX.parent / "trial15" / "r08_completed_eval_slow"))
    assert grown.summary.startswith("Periodic passes between training steps got longer"), grown.summary
    assert grown.category is not None and grown.category.value == "user_code"


def test_a_config_file_that_does_not_parse_beats_the_waiting_nodes_outside_signal() -> None:
    """r05 (two agents, .tar.gz): node1's YAML config has a tab, yaml.scanner.ScannerError at start-up; node0 waited in
    init until a wrapper's timeout SIGTERMed its agent. The answer was "the agent was signalled from outside on node
    node0", infrastructure, the healthy node named; a YAML parse error had no entry at all."""
    d = _diagnose(FIX / "r05_yaml_tab_node1" / "job_logs.tar.gz")
    assert d.category.value == "config", d.root_cause.summary
    assert d.signature_hits[0].signature_id == "config_file_unparsable"
    assert d.first_failing_rank == 1 and "node1" in d.root_cause.summary
    assert "node0" not in d.faulty_nodes


def test_a_rank_stuck_in_its_own_http_call_is_the_jobs_code_with_the_reason() -> None:
    """r11 (--log-dir + py-spy snapshots): rank 0's urlopen() without a timeout to a gateway that never answers; the
    culprit frame (SocketIO.readinto) was found, yet "unknown", "Nothing in the logs says why it stalled", restart."""
    d = _diagnose(FIX / "r11_http_push_no_timeout")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 0
    assert d.category.value == "user_code", d.root_cause.summary
    assert "timeout" in d.root_cause.summary and "Nothing in the logs says why" not in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_the_hang_culprit_fills_the_rank_a_confident_log_verdict_left_open() -> None:
    """r10 (a breakpoint() on rank 1 with stdin an open pipe; stack snapshots): the text named rank 1, the JSON's
    first_failing_rank was null (the debugger prompt is on no rank's line)."""
    d = _diagnose(FIX / "r10_pdb_breakpoint_rank1")
    assert d.category.value == "user_code" and d.first_failing_rank == 1, d.root_cause.summary
    # the stacks single out the rank the answer names: not the 0.09 of a logs-only user_code guess
    assert d.confidence >= 0.4


def test_a_resource_limit_is_raised_before_a_relaunch() -> None:
    """r19 (two agents, .zip): node1 under `ulimit -S -t 10`, rank 1 SIGXCPU; the diagnosis said to raise the limit and
    the plan said to "run the job's launch command again on the same hosts"."""
    d = _diagnose(FIX / "r19_rlimit_cpu_sigxcpu_node1" / "r19_logs.zip")
    assert d.first_failing_rank == 1
    assert d.recovery is not None and d.recovery.rule_id == "resource_limit_raise_first"
    assert d.recovery.level.value == "L4"
