"""A new user's sixth trial on real runs (trial 19, 20 gloo/CPU runs recorded on the lab host, after trial 18's fixes):
each test keeps one run's bundle (``tests/fixtures/trial19``) and what the user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial19"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_rank_waiting_on_its_dataloader_workers_is_read_from_the_stacks() -> None:
    """r16 (accelerate + 3 snapshots): rank 1's DataLoader worker blocked opening a FIFO (a hung mount); the culprit was
    right but "unknown / platform / restart", and the plan said "there are no stacks left to dump" beside the dumps."""
    d = _diagnose(FIX / "r16_worker_blocked_read")
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1
    assert d.category.value == "storage" and "DataLoader workers" in d.root_cause.summary, d.root_cause.summary
    assert d.recovery is not None and "no stacks left to dump" not in d.recovery.action


def test_missing_keys_in_a_checkpoint_lead_over_the_load_error_header() -> None:
    """r11 (Ray Train, .zip): a model with an extra LayerNorm resumed from an older checkpoint; load_state_dict raised
    "Error(s) in loading state_dict for MLP: Missing key(s) ...". The header matched the shape-mismatch entry, which led
    ("Tensor shape or size mismatch"), and the right finding was listed as a cascade."""
    d = _diagnose(FIX / "r11_resume_missing_keys_ray" / "bundle.zip")
    assert d.signature_hits[0].signature_id == "state_dict_keys_mismatch", d.root_cause.summary
    assert d.category.value == "config"


def test_a_few_milliseconds_of_data_time_do_not_name_a_rank_beside_a_job_wide_slowdown() -> None:
    """r18 (two agents, a timing feed without comm_s): rank 1 got 4x the rows from step 200 and every rank's compute
    tripled (the others wait inside it); the answer was "Rank 0 on node0 is an intermittent data straggler (7.94x ...)",
    category storage, over data times of 2-4 ms. A rank whose own excess is a sliver of the job's loss is not named."""
    from diag_service.slow.analyze import analyze_slow, load_feed

    rep = analyze_slow(load_feed(FIX / "r18_bucket_skew_rank1" / "timing.jsonl.gz"))
    assert rep.failure_mode is not None and rep.job_slowdown, rep.summary
    assert not rep.stragglers, rep.summary
    assert rep.category is not None and rep.category.value != "storage"


def test_one_long_slowdown_is_not_cut_into_three_small_ones() -> None:
    """r20 (two agents, per-node files): node1's log shipper fell behind and rank 1's prints blocked, 37 -> 95-112 ms
    per step from step ~200 to the end of 900; the answer listed three ~1.3x episodes worth 3.8 s in all, while the
    whole-log test on the same series finds one 3x stretch of about 45 s."""
    d = _diagnose(FIX / "r20_log_backpressure_node1")
    assert d.failure_mode.value == "fail_slow" and d.slow is not None
    worst = max(d.slow.job_slowdown, key=lambda e: e.time_lost_s)
    assert worst.slowdown_factor > 2.5 and worst.time_lost_s > 30, d.root_cause.summary
