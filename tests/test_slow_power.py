"""The power-curve harness (eval/slow_power.py): injection into a real clean lab feed keeps the job
synchronous and adds exactly the slowdown asked for; the detector finds a clear one on that feed."""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))

import slow_power  # noqa: E402

FEED = "quiet-r4n2-s765447863"  # a dev feed (eval/slow_feeds/split.json)


def _by_step(recs):
    out = defaultdict(dict)
    for r in recs:
        out[int(r["step"])][int(r["rank"])] = r
    return out


def test_the_feed_is_a_dev_feed() -> None:
    assert FEED in slow_power.load_split()["dev"]


def test_job_slowdown_multiplies_the_step_time_from_the_onset() -> None:
    recs = slow_power.load_feed(FEED)
    out = _by_step(slow_power.inject(recs, "job_compute", 1.3, 1, onset=200))
    base = _by_step(recs)
    for step in (150, 250, 399):
        before = statistics.median(r["end"] - r["start"] for r in base[step].values())
        after = statistics.median(r["end"] - r["start"] for r in out[step].values())
        assert abs(after / before - (1.3 if step >= 200 else 1.0)) < 1e-4  # unix-second floats
    # later steps start later by the time added so far, on every rank alike (the job is synchronous)
    shift = {rk: out[399][rk]["start"] - base[399][rk]["start"] for rk in base[399]}
    assert max(shift.values()) - min(shift.values()) < 1e-5 and min(shift.values()) > 0


def test_rank_slowdown_on_one_step_in_five_makes_the_others_wait() -> None:
    recs = slow_power.load_feed(FEED)
    out = _by_step(slow_power.inject(recs, "rank_compute", 2.0, 5, onset=100, target=2))
    base = _by_step(recs)
    for step in (100, 105):
        assert abs(out[step][2]["compute_s"] - 2 * base[step][2]["compute_s"]) < 1e-9
        added = base[step][2]["compute_s"]
        for rk in (0, 1, 3):
            assert abs(out[step][rk]["comm_s"] - base[step][rk]["comm_s"] - added) < 1e-9
    assert out[101][2]["compute_s"] == base[101][2]["compute_s"]


def test_a_clear_straggler_is_named_and_the_clean_feed_has_none() -> None:
    recs = slow_power.load_feed(FEED)
    assert slow_power.run_detector(recs).stragglers == []
    rep = slow_power.run_detector(slow_power.inject(recs, "rank_compute", 2.0, 1, onset=150, target=1))
    res = slow_power.judge(rep, "rank_compute", 150, 1, None, [])
    assert res["detected"] and res["kind_ok"] and res["delay"] <= 20


def test_a_rank_that_issues_its_collectives_late_makes_the_others_wait_for_it() -> None:
    """As in the lab's real slow_rank_comm runs (tests/fixtures/slow/lab_slow_rank_comm): the late rank's
    communication phase grows, and every other rank's grows by the same time, spent waiting for it."""
    recs = slow_power.load_feed(FEED)
    base = _by_step(recs)
    out = _by_step(slow_power.inject(recs, "rank_comm", 2.0, 1, onset=150, target=1))
    for step in (150, 151, 300):
        extra = base[step][1]["comm_s"]
        assert abs(out[step][1]["comm_s"] - 2 * extra) < 1e-9
        assert abs(out[step][1]["comm_wait_s"] - base[step][1]["comm_wait_s"]) < 1e-12  # its own wait is unchanged
        for rk in (0, 2, 3):
            assert abs(out[step][rk]["comm_wait_s"] - base[step][rk]["comm_wait_s"] - extra) < 1e-9
    rep = slow_power.run_detector(slow_power.inject(recs, "rank_comm", 2.0, 1, onset=150, target=1))
    res = slow_power.judge(rep, "rank_comm", 150, 1, None, [])
    assert res["detected"] and res["kind_ok"]
    # without comm_wait_s every rank's communication grows alike: the job slows, no rank can be named
    flat = slow_power.inject(recs, "rank_comm_nowait", 2.0, 1, onset=150, target=1)
    assert all("comm_wait_s" not in r for r in flat)


def test_oracle_bound_on_a_real_clean_feed_separates_large_slowdowns_from_the_clean_wander() -> None:
    import slow_oracle_bound

    res = slow_oracle_bound.bound([FEED])
    rows = {r["window"]: r for r in res["rows"]}
    # the clean run's own 10-step wander is above its median (a real host's pace is not flat) ...
    assert rows[10]["clean_max_ratio"] > 1.05
    # ... and longer windows average it down, so a sustained 1.5x rises above the clean maximum
    assert rows[50]["clean_max_ratio"] < rows[10]["clean_max_ratio"]
    assert rows[50]["p_over"]["1.5"] == 1.0
    assert rows[10]["p_over"]["1.1"] < rows[50]["p_over"]["1.5"]


def test_a_clean_feed_whose_data_phase_spikes_raises_no_straggler() -> None:
    """The data-loading excess of a clean run is single-step spikes (20-60x the peers' data time; 2.5 % of
    rank-steps beyond 10 robust sigmas on the dev feeds), far from Gaussian: a rank CUSUM whose reference
    is half the minimum effect (0.05 step), with the interval of a 10^6-step Gaussian run length (at least 0.1
    step), raised a data straggler on this feed (docs/slow.md, "Where the rank test loses that power"); the
    present one, at the whole minimum effect with a 0.7-step interval, none."""
    assert "quiet-r8n2-s551404566" in slow_power.load_split()["dev"]
    rep = slow_power.run_detector(slow_power.load_feed("quiet-r8n2-s551404566"))
    assert rep.stragglers == [] and rep.groups == []


def _checkpoint_every(recs, period: int, factor: float):
    """Unmarked pauses: every ``period``-th step ``factor`` times longer on every rank (a save the feed does not
    mark), from the start."""
    out, shift = [], 0.0
    for step, by_rank in sorted(_by_step(recs).items()):
        extra = 0.0
        if step % period == period - 1:
            extra = statistics.median(r["end"] - r["start"] for r in by_rank.values()) * (factor - 1)
        for r in by_rank.values():
            r = dict(r, start=r["start"] + shift, end=r["end"] + shift + extra)
            out.append(r)
        shift += extra
    return out


def test_a_job_slow_on_one_step_in_five_is_an_intermittent_episode() -> None:
    """Every rank 2x on every fifth step from step 150 (the job's cost: 1.2x on average): the mean test
    excludes those steps as a periodic phase; the recurrence test finds them."""
    recs = slow_power.load_feed(FEED)
    # (this clean run's own 1.18x wander over steps 95-119 is a mean-test episode, not a recurrence)
    assert not [e for e in slow_power.run_detector(recs).job_slowdown if e.intermittent]
    rep = slow_power.run_detector(slow_power.inject(recs, "job_compute", 2.0, 5, onset=150))
    eps = [e for e in rep.job_slowdown if e.intermittent]
    assert eps, rep.summary
    assert 140 <= eps[0].start_step <= 160 and eps[0].detected_at_step <= 150 + 60
    assert 1.1 <= eps[0].slowdown_factor <= 1.35
    assert "intermittent" in rep.summary


def test_unmarked_checkpoint_pauses_from_the_start_are_the_jobs_own_rate() -> None:
    recs = _checkpoint_every(slow_power.load_feed(FEED), 40, 4.0)
    rep = slow_power.run_detector(recs)
    assert not [e for e in rep.job_slowdown if e.intermittent], rep.summary
