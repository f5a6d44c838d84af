"""A new user's trial 26 (/work/trial26_inputs/REPORT.md): real gloo/CPU runs the tool got partly right or misled on at
first contact, each read from the run's own bundle (``tests/fixtures/trial26``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial26"


def test_an_error_the_rank_caught_and_outlived_before_a_hang_is_the_hangs_cause() -> None:
    """r20 (accelerate, one file): rank 0's checkpoint save hit NotADirectoryError; the job logged "training continues"
    and returned early, skipping the save's barrier; rank 1 waited in it, rank 0 in the next all-reduce, both timed out
    40 s later. It read fail_stop, storage, "stale NFS handle", platform. Rank 0's own later timeout says it outlived
    its error: a hang, the error (and its handling) the cause, rank 0 first."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r20_swallowed_ckpt.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 0), d.root_cause.summary
    assert d.category.value == "user_code" and "went on after its own error" in d.root_cause.summary


def test_an_embedding_bag_index_past_the_vocabulary_on_every_rank_is_named_and_singles_no_rank_out() -> None:
    """r14 (torchrun --log-dir --tee, .zip): --vocab 1000 with shards holding ids up to 1999; every rank raised
    nn.EmbeddingBag's "Index 0 of input takes value 1730 which is not in the valid range [0, 1000)" at step 1. It read
    "Unclassified RuntimeError", first failing rank 0. The message is EmbeddingBag's own check: ids past the table,
    raised by every rank alike."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r14_vocab_config.zip"), kb=False, llm=False))
    assert d.category.value == "data" and d.first_failing_rank is None, d.root_cause.summary
    assert "on every rank (4)" in d.root_cause.summary


def test_a_synchronous_metrics_push_on_rank_0_is_named_from_its_untimed_time() -> None:
    """r15 (torchrun --tee, folder with job.log + timing.jsonl): rank 0 pushes metrics synchronously to a collector that
    degrades at its 600th request: ~10 -> ~37 ms/step from step 601, rank 0's compute_s 2-6 ms (the push is outside
    the timed phases), rank 1's 33-44 ms (it waits in the all-reduce). It read "every rank's compute time rose alike",
    infrastructure, no rank, from step 198 (host drift)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r15_metrics_push"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_slow", "user_code", 0)
    assert d.slow is not None and 580 <= d.slow.stragglers[0].first_step <= 620, d.root_cause.summary


def test_a_job_that_spends_most_of_its_time_between_its_steps_is_slow() -> None:
    """r16 (mp.spawn, one file): DataLoader workers with persistent_workers=False restart at every epoch (32 steps),
    a pause of seconds each time: 113 s for 640 steps whose own stated times add up to a few. It read "No failure in
    these logs". The time between the step lines that the steps' stated times do not cover, in pauses at one period,
    is the slowdown: fail_slow, config, the pauses and their period said."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r16_worker_respawn.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "config"), d.root_cause.summary
    assert "outside its logged steps" in d.root_cause.summary and "every 32 steps" in d.root_cause.summary


def test_evaluation_pauses_of_a_clean_run_are_not_this_slowdown() -> None:
    """The counter-example (zoo dev clean control, mp.spawn, evaluation pauses taking about half of a short run): not
    read as a job spending its time between its steps."""
    run = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "clean" / "runs" / "clean5_spawn_eval_pause"
    d = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert d.failure_mode.value != "fail_slow" and "outside its logged steps" not in d.root_cause.summary
