"""Fail-slow detection on synthetic synchronous jobs with known faults (diag_service.slow.synth).

Expected values are derived from the generated feed itself (onset, faulty ranks, the step times it
produced), never typed in.
"""

from __future__ import annotations

import numpy as np
import pytest

from diag_service.domain import Category, FailureMode
from diag_service.slow import SlowConfig, StragglerKind, analyze_slow
from diag_service.slow.rank import Grouping, group_medians, max_of_others, peer_reference
from diag_service.slow.synth import Fault, SynthConfig, make_feed

ONSET = 55
STEPS = 130  # warm-up 5 + baseline 20, onset, and enough steps after it


def _clean(report) -> bool:  # noqa: ANN001 - SlowReport
    return not report.job_slowdown and not report.stragglers and not report.groups and report.failure_mode is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_warmup_eval_and_checkpoint_steps_do_not_alarm(seed: int) -> None:
    cfg = SynthConfig(seed=seed, warmup=8, eval_every=25, eval_s=2.0, ckpt_every=40, ckpt_s=3.0, steps=170)
    rep = analyze_slow(make_feed(cfg))
    assert _clean(rep), rep.summary
    assert rep.baseline.warmup_steps >= 5
    # both periods are learned and their steps excluded
    assert any("every 25 steps" in p for p in rep.baseline.periodic)
    assert any("every 40 steps" in p for p in rep.baseline.periodic)
    n_periodic = len({s for s in range(1, cfg.steps) if s % 25 == 0 or s % 40 == 0})
    assert n_periodic <= rep.baseline.excluded_steps <= n_periodic + 3


def test_eval_steps_marked_in_the_feed_are_excluded() -> None:
    b = make_feed(SynthConfig(steps=STEPS, seed=4, eval_every=10, eval_s=4.0))
    b.kind[:] = np.where((b.step % 10 == 0) & (b.step > 0), 1, 0)
    rep = analyze_slow(b)
    assert _clean(rep), rep.summary
    assert rep.baseline.excluded_steps >= len(range(10, STEPS, 10))


@pytest.mark.parametrize("seed", [5, 6])
def test_clean_job_has_no_alarm(seed: int) -> None:
    rep = analyze_slow(make_feed(SynthConfig(seed=seed, ranks=64, steps=200, jitter=0.05)))
    assert _clean(rep), rep.summary
    assert rep.summary.startswith("No slowdown")


@pytest.mark.parametrize("rank,factor", [(5, 1.3), (11, 1.8)])
def test_compute_straggler_found_within_20_steps(rank: int, factor: float) -> None:
    rep = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=rank, faults=[Fault("compute", ONSET, factor, (rank,))])))
    assert [s.rank for s in rep.stragglers] == [rank]
    s = rep.stragglers[0]
    assert s.kind is StragglerKind.COMPUTE and not s.intermittent and s.node == f"node{rank // 8}"
    assert ONSET - 2 <= s.first_step <= ONSET + 2
    assert ONSET <= s.detected_at_step <= ONSET + 20
    assert s.slowdown_factor == pytest.approx(factor, rel=0.05)
    # the victims wait in the all-reduce: their communication grows, but nobody else is blamed
    assert rep.category is Category.GPU_HARDWARE and rep.failure_mode is FailureMode.FAIL_SLOW
    ep = rep.job_slowdown[0]
    assert ep.explained_by_ranks == [rank] and ep.kind is StragglerKind.COMPUTE


def test_intermittent_straggler_counts() -> None:
    f = Fault("compute", ONSET, 2.0, (9,), period=8, duty=3)
    rep = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=7, faults=[f])))
    assert [s.rank for s in rep.stragglers] == [9]
    s = rep.stragglers[0]
    assert s.intermittent and 0.25 <= s.slow_fraction <= 0.55
    assert s.detected_at_step <= ONSET + 20
    assert s.slowdown_factor == pytest.approx(2.0, rel=0.1)
    assert len(rep.job_slowdown) == 1, "the pauses of an intermittent slowdown must not split the episode"


def test_kinds_told_apart() -> None:
    data = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=8, faults=[Fault("data", ONSET, 6.0, (3,))])))
    assert [(s.rank, s.kind) for s in data.stragglers] == [(3, StragglerKind.DATA)]
    assert data.category is Category.DATA  # one rank's own data or loader, not shared storage
    # a comm profiler's view (comm_s = own transfer, no waiting): the slow link's rank only
    comm = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=9, comm_model="transfer",
                                              faults=[Fault("comm", ONSET, extra_s=0.25, ranks=(7,))])))
    assert [(s.rank, s.kind) for s in comm.stragglers] == [(7, StragglerKind.COMMUNICATION)]
    assert comm.category is Category.NETWORK
    assert comm.stragglers[0].detected_at_step <= ONSET + 20
    comp = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=10, faults=[Fault("compute", ONSET, 1.6, (2,))])))
    assert {s.kind for s in comp.stragglers} == {StragglerKind.COMPUTE}


def test_node_aggregation() -> None:
    cfg = SynthConfig(steps=STEPS, seed=11, ranks=32, ranks_per_node=8, faults=[Fault("compute", ONSET, 1.3, "node:node2")])
    rep = analyze_slow(make_feed(cfg))
    nodes = [g for g in rep.groups if g.group == "node"]
    assert [(g.name, g.kind) for g in nodes] == [("node2", StragglerKind.COMPUTE)]
    g = nodes[0]
    assert g.n_ranks == 8 and g.detected_at_step <= ONSET + 20
    assert g.slowdown_factor == pytest.approx(1.3, rel=0.05)
    assert {s.rank for s in rep.stragglers} <= set(range(16, 24))
    assert "Node node2" in rep.summary
    # one slow rank does not make its node slow
    one = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=12, ranks=32, faults=[Fault("compute", ONSET, 1.5, (17,))])))
    assert not [g for g in one.groups if g.group == "node"] and [s.rank for s in one.stragglers] == [17]


def test_job_wide_slowdown_episode_and_time_lost() -> None:
    cfg = SynthConfig(steps=STEPS, seed=13, faults=[Fault("job", ONSET, 1.4, until=ONSET + 50)])
    b = make_feed(cfg)
    rep = analyze_slow(b)
    assert not rep.stragglers and len(rep.job_slowdown) == 1
    ep = rep.job_slowdown[0]
    assert ONSET - 2 <= ep.start_step <= ONSET + 2 and ep.detected_at_step <= ONSET + 10
    assert ep.end_step is not None and ONSET + 48 <= ep.end_step <= ONSET + 52 and not ep.ongoing
    # the feed's own step times: median over ranks of (end - start)
    steps = np.unique(b.step)
    T = np.array([np.median((b.end - b.start)[b.step == s]) for s in steps])
    base = rep.baseline.step_time_s
    inside = (steps >= ep.start_step) & (steps <= ep.end_step)
    assert ep.slowdown_factor == pytest.approx(T[inside].mean() / base, rel=0.02)
    assert ep.time_lost_s == pytest.approx((T[inside] - base).sum(), rel=0.02)
    assert ep.kind is StragglerKind.COMPUTE and rep.category is Category.INFRASTRUCTURE
    assert rep.time_lost_s == pytest.approx(ep.time_lost_s)


def test_min_effect_is_respected() -> None:
    feed = make_feed(SynthConfig(steps=STEPS, seed=14, faults=[Fault("job", ONSET, 1.05)]))
    assert not analyze_slow(feed).job_slowdown
    tuned = analyze_slow(feed, SlowConfig(min_effect=0.03))
    assert tuned.job_slowdown


def test_straggler_present_from_the_start() -> None:
    rep = analyze_slow(make_feed(SynthConfig(steps=STEPS, seed=15, faults=[Fault("compute", 0, 1.8, (4,))])))
    assert [s.rank for s in rep.stragglers] == [4]
    s = rep.stragglers[0]
    assert s.present_at_start and s.slowdown_factor == pytest.approx(1.8, rel=0.05)


def test_too_short_a_feed_gives_a_warning_not_an_error() -> None:
    rep = analyze_slow(make_feed(SynthConfig(seed=16, steps=12)))
    assert rep.failure_mode is None and rep.baseline.step_time_s is None
    assert any("baseline" in w for w in rep.input.warnings)


def test_group_medians_match_numpy() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    x[rng.integers(0, 500, 40)] = np.nan
    g = rng.integers(0, 17, 500)
    med, cnt = group_medians(x, g, 17)
    for k in range(17):
        v = x[(g == k) & np.isfinite(x)]
        assert cnt[k] == v.size and med[k] == pytest.approx(np.median(v))
    eq = np.repeat(np.arange(10), 8)
    y = rng.normal(size=80)
    m2, c2 = Grouping(eq, 10).medians(y)
    assert np.allclose(m2, [np.median(y[eq == k]) for k in range(10)]) and (c2 == 8).all()


def test_peer_reference_small_groups_and_max_of_others() -> None:
    ref, sig = peer_reference(np.array([1.0, 3.0]), None, 0, 1.4826)
    assert ref.tolist() == [3.0, 1.0] and sig.tolist() == [0.0, 0.0]  # two ranks: the other one
    ref, sig = peer_reference(np.array([1.0, 2.0, 3.0, 10.0, np.nan]), None, 0, 1.4826)
    assert ref[0] == 2.5 and np.isnan(ref[4]) and sig[0] == pytest.approx(1.4826 * 1.0)
    assert max_of_others(np.array([1.0, 5.0, 3.0])).tolist() == [5.0, 3.0, 5.0]


def test_episode_is_dated_from_the_change_not_from_a_mild_drift_before_it() -> None:
    """A 6 % drift (below the minimum effect) from step 25, then +40 % from step 60 (every rank)."""
    cfg = SynthConfig(seed=11, steps=120, ranks=8, jitter=0.02,
                      faults=[Fault("job", 25, 1.06, until=59), Fault("job", 60, 1.4)])
    rep = analyze_slow(make_feed(cfg))
    assert len(rep.job_slowdown) == 1
    ep = rep.job_slowdown[0]
    assert 58 <= ep.start_step <= 62 and ep.detected_at_step >= 60
    assert 1.3 <= ep.slowdown_factor <= 1.5  # the drift's steps are not averaged in
    assert rep.stragglers == []
