"""Scoring of fail-slow lab runs (``eval/slow_eval.py``): what counts as a hit, a false alarm, a delay.

Reports come from the real detector on feeds shaped like the lab's (``test_slow_shared_host``); the
truth dicts have the keys of the lab's ``truth.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from test_slow_shared_host import lab_like_feed

from diag_service.slow import analyze_slow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
from slow_eval import score_reports  # noqa: E402


def _truth(scenario: str, onset: int | None, rank: int | None, control: bool = False) -> dict[str, Any]:
    return {"scenario": scenario, "failure_mode": "fail_slow", "control": control, "ranks": 4, "nodes": 2,
            "fault": {"kind": "none" if control else "slow_compute", "scope": "rank" if rank is not None else "all"},
            "faulty_rank": rank, "affected_ranks": [rank] if rank is not None else [], "onset_step": onset}


def test_hit_is_the_true_rank_after_the_onset_and_delay_is_localisation() -> None:
    onset = 60
    rep = analyze_slow(lab_like_feed(seed=3, jitter=0.1, factor={s: {2: 1.8} for s in range(onset, 120)}))
    res = score_reports([("a", _truth("slow_rank_compute", onset, 2), rep)])
    row = res["runs"][0]
    assert (row["tp"], row["fp"], row["fn"]) == (1, 0, 0)
    straggler = next(s for s in rep.stragglers if s.rank == 2)
    assert row["delay_steps"] == straggler.detected_at_step - onset
    assert res["overall"]["within_20_steps"] == (1.0 if row["delay_steps"] <= 20 else 0.0)


def test_the_true_rank_flagged_before_the_onset_is_not_a_hit() -> None:
    # The feed's rank 2 is slow from step 40; the truth says the fault started at step 90. A rank flagged
    # before its fault existed is a false alarm that happens to name the right rank.
    rep = analyze_slow(lab_like_feed(seed=3, jitter=0.1, factor={s: {2: 1.8} for s in range(40, 120)}))
    assert any(s.rank == 2 and s.detected_at_step < 90 for s in rep.stragglers)
    row = score_reports([("b", _truth("slow_rank_compute", 90, 2), rep)])["runs"][0]
    assert (row["tp"], row["fp"], row["fn"]) == (0, 1, 1)
    assert row["early"] == [2]
    assert row["delay_steps"] is None


def test_job_slowdown_on_a_control_is_not_a_straggler_false_alarm() -> None:
    # Other work slows every rank by 1.5x from step 50: a job-level episode, no straggler.
    rep = analyze_slow(lab_like_feed(seed=4, jitter=0.05, job_factor={s: 1.5 for s in range(50, 120)}))
    assert rep.job_slowdown and not rep.stragglers and not rep.groups
    clean = analyze_slow(lab_like_feed(seed=6, jitter=0.05))
    res = score_reports([("c1", _truth("slow_control_clean", None, None, control=True), rep),
                         ("c2", _truth("slow_control_clean", None, None, control=True), clean)])
    o = res["overall"]
    assert o["clean_runs"] == 2
    assert o["false_alarm_rate"] == 0.0
    assert o["job_episode_rate_controls"] == 0.5
    assert o["any_alarm_rate_controls"] == 0.5
    assert o["precision"] is None  # no straggler predicted, none true


def test_job_wide_fault_delay_is_the_job_episode() -> None:
    onset = 55
    rep = analyze_slow(lab_like_feed(seed=8, jitter=0.05, job_factor={s: 1.6 for s in range(onset, 120)}))
    row = score_reports([("d", _truth("slow_job_compute", onset, None), rep)])["runs"][0]
    first = min(e.detected_at_step for e in rep.job_slowdown if e.detected_at_step >= onset)
    assert row["delay_steps"] == row["job_delay_steps"] == first - onset
    assert row["fp"] == len(rep.stragglers) == 0
