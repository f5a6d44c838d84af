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
