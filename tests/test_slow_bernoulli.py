"""The recurrence test's decision interval is the one whose in-control run length is the stated one."""

from __future__ import annotations

import math

import numpy as np

from diag_service.slow.rank import bernoulli_arl, bernoulli_h_for_arl


def _simulated_arl(p0: float, p1: float, h: float, p: float, runs: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    up, down = math.log(p1 / p0), math.log((1 - p1) / (1 - p0))
    lengths = []
    for _ in range(runs):
        s, n = 0.0, 0
        while s < h:
            n += 1
            s = max(0.0, s + (up if rng.random() < p else down))
        lengths.append(n)
    return float(np.mean(lengths))


def test_the_markov_chain_run_length_matches_simulation() -> None:
    # a short target so that a simulation can check it: 2,000 runs, standard error ~2 %
    p0, p1 = 0.05, 0.15
    h = bernoulli_h_for_arl(p0, p1, 300.0)
    chain = bernoulli_arl(p0, p1, h)
    assert 300.0 <= chain < 330.0  # the smallest interval reaching the target (the chain's states are discrete)
    sim = _simulated_arl(p0, p1, h, p0, runs=2000, seed=1)
    assert abs(sim - chain) / chain < 0.12, (sim, chain)
    # out of control (one step in five slow) it alarms far sooner, as the chain says
    fast = bernoulli_arl(p0, p1, h, 0.2)
    assert fast < 60
    assert abs(_simulated_arl(p0, p1, h, 0.2, runs=2000, seed=2) - fast) / fast < 0.12


def test_the_exact_interval_is_below_walds_bound_for_the_same_guarantee() -> None:
    # Wald's log(arl0) guarantees the run length with a large margin: at p0 = 0.02 it is ~30x longer
    p0, p1 = 0.02, 0.1
    h = bernoulli_h_for_arl(p0, p1, 1e5)
    assert h < math.log(1e5) - 2
    assert bernoulli_arl(p0, p1, math.log(1e5)) > 10 * 1e5
    assert 0.9e5 < bernoulli_arl(p0, p1, h) < 1.3e5


def test_the_interval_is_found_in_a_few_solves_and_never_below_the_stated_run_length() -> None:
    for p0, p1 in ((0.01, 0.1), (0.03, 0.1), (0.2, 0.6)):
        bernoulli_arl.cache_clear()
        bernoulli_h_for_arl.cache_clear()
        h = bernoulli_h_for_arl(p0, p1, 1e6)
        solves = bernoulli_arl.cache_info().misses
        assert solves <= 12, solves  # a bisection on the interval itself took 30
        width = -math.log((1 - p1) / (1 - p0)) / 4  # one state of the chain
        assert bernoulli_arl(p0, p1, h) >= 1e6 > bernoulli_arl(p0, p1, h - width)


def test_siegmunds_interval_gives_the_stated_run_length_on_gaussian_noise() -> None:
    """The job CUSUM's interval comes from Siegmund's approximation (job.cusum_h_for_arl); a simulated
    CUSUM on standard normal increments at k = 0.5 reaches it after about the stated number of steps (a
    short target so that 3,000 simulated runs can check it, standard error ~2 %)."""
    from diag_service.slow.job import cusum_h_for_arl

    h = cusum_h_for_arl(0.5, 400.0)
    rng = np.random.default_rng(5)
    s = np.zeros(3000)
    length = np.zeros(3000)
    alive = np.ones(3000, bool)
    t = 0
    while alive.any() and t < 20000:
        t += 1
        s = np.where(alive, np.maximum(0.0, s + rng.standard_normal(3000) - 0.5), s)
        hit = alive & (s >= h)
        length[hit] = t
        alive &= ~hit
    assert not alive.any()
    assert abs(length.mean() - 400.0) / 400.0 < 0.1, length.mean()

