"""The rank CUSUM's decision interval comes from its in-control run length (Brook & Evans's Markov chain)."""

from __future__ import annotations

import math

import pytest

from diag_service.slow.models import SlowConfig
from diag_service.slow.rank import PeerTracker, clipped_gauss_arl, clipped_gauss_h


@pytest.mark.parametrize(("h", "mu", "table"), [(4.0, 0.0, 336.0), (5.0, 0.0, 930.0), (4.0, 1.0, 8.38), (5.0, 1.0, 10.4)])
def test_unclipped_chain_matches_the_published_tables(h: float, mu: float, table: float) -> None:
    # one-sided tabular CUSUM, k = 0.5 sigma (Montgomery, Introduction to Statistical Quality Control, ch. 9)
    assert clipped_gauss_arl(0.5, h, 50.0, mu=mu) == pytest.approx(table, rel=0.04)


def test_interval_reaches_the_stated_run_length() -> None:
    for k, c, arl0 in ((0.55, 2.5, 1e6), (0.55, 5.5, 1.2e7), (0.7, 3.0, 1e4)):
        h = clipped_gauss_h(k, c, arl0)
        assert clipped_gauss_arl(k, h, c) >= arl0 > clipped_gauss_arl(k, 0.98 * h, c)
    # clipping the evidence lowers the interval a run length needs; a reference above the clip never alarms
    assert clipped_gauss_h(0.55, 2.5, 1e6) < clipped_gauss_h(0.55, 50.0, 1e6)
    assert clipped_gauss_arl(3.0, 5.0, 2.5) == math.inf
    assert clipped_gauss_h(3.0, 2.5, 1e6) == 2.5  # one clipped step never alarms alone


def test_job_budget_is_split_over_units_and_kinds() -> None:
    cfg = SlowConfig()
    small, large = PeerTracker(cfg), PeerTracker(cfg)
    small.n_units, large.n_units = 4, 10_000
    small.n_kinds = large.n_kinds = 3
    sig = 0.09
    k_small, _, h_small = small._interval(0, sig)
    k_large, _, h_large = large._interval(0, sig)
    assert k_small == k_large == pytest.approx(max(0.5 * sig, 0.5 * cfg.min_effect))
    assert h_large > h_small > cfg.rank_h
