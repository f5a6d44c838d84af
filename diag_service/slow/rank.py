"""Rank-level (and node-/stage-level) straggler localisation: robust peer comparison + per-unit CUSUM.

Per step, for every unit (rank; or node, or pipeline stage, using their ranks' medians) and every
phase available, the unit's *excess* over its peers is ``e = x - ref``, where ``ref`` is the peers'
median (the other unit's value when the peer group has only two units) and the peers' spread is
``sigma = 1.4826 x MAD`` (0 for fewer than three units). The per-step evidence, in units of the job's
step time ``T``, is ``u = e / T``. Each unit learns the median ``b`` of ``u`` over the baseline window and
then a running Huber mean of it over its in-control steps; every unit of a kind shares one pooled sigma (the
median over recent steps of the in-control units' median absolute excess, at least their recent spread). A
one-sided CUSUM ``S = max(0, S + clip(u - max(b, 0), +-c sigma) - k)`` with ``k = max(min_effect / 2,
0.5 sigma)`` accumulates the excess (Page 1954), so that both persistent and intermittent stragglers
build evidence, and the unit alarms when ``S >= h`` -- the interval whose in-control average run length
for clipped normal evidence is the job's ``rank_arl0`` split over units and kinds (Brook & Evans 1972,
:func:`clipped_gauss_h`) -- *and* its mean excess since the CUSUM's last zero is at least ``min_effect``
step times. A burst that slows every rank moves the peer median with it, so it adds no evidence. The
straggler's first step is the CUSUM's change-point estimate (the step after its last zero).

Kinds (issue 7: "the straggler is the rank that computes longest while the others wait"):

* ``compute``: evidence on the compute phase;
* ``data``: evidence on the data-loading phase;
* ``communication``: evidence on the communication phase *and* on the rank's whole busy time
  (compute + comm + data), the smaller of the two. A rank that merely waits for a straggler has a long
  communication phase but a normal busy time (it computed less), so it is not blamed.

State: a few float/int arrays of length (units x 3 phases), grown by doubling; alarmed units have
a small record each. Every update is O(units in the step).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from diag_service.slow.models import SlowConfig, StepEvidence, StragglerKind

KINDS = (StragglerKind.COMPUTE, StragglerKind.COMMUNICATION, StragglerKind.DATA)


def median(v: np.ndarray) -> float:
    """Median of a 1-D array without NaN (NaN for an empty one). ``np.median`` for large arrays; a sort for
    small ones, where numpy's per-call overhead dominates (a rank-level step of a 16-rank job)."""
    n = v.size
    if n == 0:
        return math.nan
    if n > 256:
        return float(np.median(v))
    w = np.sort(v)
    return float(w[(n - 1) // 2] + w[n // 2]) / 2


def nanmedian(v: np.ndarray) -> float:
    """Median of the finite values of ``v`` (NaN when there is none)."""
    return median(v[np.isfinite(v)])


def group_medians(x: np.ndarray, g: np.ndarray, ng: int) -> tuple[np.ndarray, np.ndarray]:
    """Median of ``x`` per group and the count of finite values per group.

    ``x``: float array (NaN ignored); ``g``: int group codes in ``[0, ng)``. Returns two arrays of length
    ``ng`` (median NaN for empty groups). O(n log n) (one lexsort).
    """
    ok = np.isfinite(x) & (g >= 0)
    xv, gv = x[ok], g[ok]
    counts = np.bincount(gv, minlength=ng)[:ng]
    med = np.full(ng, np.nan)
    if xv.size == 0:
        return med, counts
    order = np.lexsort((xv, gv))
    xs = xv[order]
    starts = np.cumsum(counts) - counts
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    med[has] = (xs[lo] + xs[hi]) / 2
    return med, counts


class Grouping:
    """Group codes prepared once for several per-group medians (the same ranks, several phases).

    ``g``: int codes in ``[0, ng)`` (negative = no group). When every non-empty group has the same
    size (8 GPUs per node, the ranks of a pipeline stage) the medians are a reshape and one partial sort
    per row, O(n); otherwise :func:`group_medians` (one lexsort, O(n log n)).
    """

    def __init__(self, g: np.ndarray, ng: int) -> None:
        self.g, self.ng = g, ng
        ok = g >= 0
        self.sizes = np.bincount(g[ok], minlength=ng)[:ng]
        self.present = np.flatnonzero(self.sizes)
        sz = self.sizes[self.present]
        self.equal = bool(ok.all() and sz.size and (sz == sz[0]).all())
        self.order = np.argsort(g, kind="stable") if self.equal else None

    def medians(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Median of ``x`` per group (NaN ignored) and the count of finite values per group (length ``ng``)."""
        if not self.equal:
            return group_medians(x, self.g, self.ng)
        k = int(self.sizes[self.present[0]])
        v = np.sort(x[self.order].reshape(self.present.size, k), axis=1)  # NaN sort last
        c = np.isfinite(v).sum(axis=1)
        med = np.full(self.ng, np.nan)
        cnt = np.zeros(self.ng, np.int64)
        cnt[self.present] = c
        lo = np.take_along_axis(v, np.maximum(c - 1, 0)[:, None] // 2, axis=1)[:, 0]
        hi = np.take_along_axis(v, np.minimum(c // 2, k - 1)[:, None], axis=1)[:, 0]
        med[self.present] = np.where(c > 0, (lo + hi) / 2, np.nan)
        return med, cnt


def peer_reference(x: np.ndarray, g: np.ndarray | None, ng: int, mad_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Each element's peer reference and the peers' robust sigma.

    ``x``: values (NaN = absent); ``g``: peer-group code of each element, or None for one group.
    The reference is the group median, except in groups of exactly two values, where it is the other
    value; sigma is ``mad_scale x MAD`` of the group, or 0 for groups of fewer than three values.
    Elements that are NaN, or alone in their group, get NaN.
    """
    n = x.shape[0]
    ref = np.full(n, np.nan)
    sig = np.zeros(n)
    if n == 0:
        return ref, sig
    if g is None:
        ok = np.isfinite(x)
        cnt = int(ok.sum())
        if cnt < 2:
            return ref, sig
        xv = x[ok]
        med = median(xv)
        if cnt == 2:
            ref = 2 * med - x
        else:
            ref[:] = med
            sig[:] = mad_scale * median(np.abs(xv - med))
        ref[~ok] = np.nan
        return ref, sig
    grp = Grouping(g, ng)
    med, counts = grp.medians(x)
    gg = np.where(g >= 0, g, 0)
    m_el = med[gg]
    c_el = np.where(g >= 0, counts[gg], 0)
    ref = np.where(c_el == 2, 2 * m_el - x, m_el)
    ref[(c_el < 2) | ~np.isfinite(x)] = np.nan
    dev = np.abs(x - m_el)
    mad, _ = grp.medians(np.where(c_el >= 3, dev, np.nan))
    sig = np.where(c_el >= 3, mad_scale * np.nan_to_num(mad[gg]), 0.0)
    return ref, sig


@dataclass
class PhaseEvidence:
    """Per-unit evidence of one phase in one step (arrays over the step's units).

    ``q``: the unit's excess over its peers, in step times, ``(x - ref) / T`` (NaN = no evidence; for the
    communication phase also bounded by the busy-time excess and reduced by a late peer's excess);
    ``ex``: the same (kept apart for callers that compare the effect size with ``min_effect``);
    ``log_ratio``: log(x / ref);
    ``excess_s``: x - ref in seconds; ``ref``: the peer reference in seconds.
    """

    q: np.ndarray
    ex: np.ndarray
    log_ratio: np.ndarray
    excess_s: np.ndarray
    ref: np.ndarray


def max_of_others(v: np.ndarray) -> np.ndarray:
    """For each element, the maximum of the *other* elements (NaN ignored; -inf when there is none). O(n)."""
    w = np.where(np.isfinite(v), v, -np.inf)
    if w.size < 2:
        return np.full(w.size, -np.inf)
    i1 = int(np.argmax(w))
    top1 = w[i1]
    top2 = np.max(np.delete(w, i1))
    out = np.full(w.size, top1)
    out[i1] = top2
    return out


def phase_evidence(
    x: np.ndarray,
    busy: np.ndarray | None,
    g: np.ndarray | None,
    ng: int,
    T: float,
    cfg: SlowConfig,
    others_late_s: np.ndarray | None = None,
) -> PhaseEvidence:
    """Evidence of one phase ``x`` (seconds per unit) against the unit's peers, for a step of time ``T``.

    For the communication phase, ``busy`` is the units' busy time (compute + comm + data) and
    ``others_late_s`` the largest compute + data excess among the *other* units in the step (seconds):
    a unit's communication excess counts only beyond both, since waiting for a late peer (and, in a ring
    all-reduce, finishing after it) is not a slow link. Raises nothing; a unit without peers or value
    gets NaN evidence.
    """
    ref, sig = peer_reference(x, g, ng, cfg.mad_scale)
    e = x - ref
    raw = e
    if busy is not None:
        # the busy-time check tells a slow link from a victim's wait
        bref, _ = peer_reference(busy, g, ng, cfg.mad_scale)
        raw = np.minimum(raw, busy - bref)
    if others_late_s is not None:
        raw = raw - np.maximum(others_late_s, 0.0)
    with np.errstate(all="ignore"):
        q = raw / T
        lr = np.where((x > 0) & (ref > 0), np.log(np.where(x > 0, x, 1.0) / np.where(ref > 0, ref, 1.0)), 0.0)
    return PhaseEvidence(q=q, ex=raw / T, log_ratio=lr, excess_s=np.nan_to_num(e), ref=ref)


@dataclass
class UnitRecord:
    """An alarmed (unit, kind): the evidence folded from finished runs plus the live run's arrays."""

    unit: int
    kind: StragglerKind
    first_step: int
    detected_at: int
    h: float
    present_at_start: bool = False
    peak: float = 0.0
    n: int = 0
    nslow: int = 0
    slr: float = 0.0
    exc: float = 0.0
    last_slow: int = -1
    active: bool = True
    evidence: list[StepEvidence] = field(default_factory=list)


_ARRAYS = (("S", float), ("start", np.int64), ("n", np.int64), ("nslow", np.int64), ("slr", float), ("exc", float),
           ("peak", float), ("last_slow", np.int64), ("alarmed", bool), ("n_ev", np.int64), ("base", float),
           ("structural", bool), ("first_seen", np.int64), ("usum", float), ("B", float),
           ("bstart", np.int64), ("nb", float), ("prev", float), ("own_hit", float), ("own_n", float))


def ar1_long_run_factor(rho: float | np.ndarray) -> float | np.ndarray:
    """``sqrt((1 + rho) / (1 - rho))``, ``rho`` clipped to [0, 0.8]: the long-run over the one-step sigma of
    an AR(1) series (scalar or array in, same shape out).

    A CUSUM sums steps; when the noise is autocorrelated (contention on a shared host lasts several
    steps), the sum's spread grows by this factor, so a decision interval in sigmas must too (e.g. Box,
    Jenkins & Reinsel, *Time Series Analysis*, ch. 3, variance of the mean of an AR(1)). The clip keeps a
    noisy estimate from a short window from making the factor (3 at 0.8) unbounded.
    """
    r = np.clip(rho, 0.0, 0.8)
    return np.sqrt((1 + r) / (1 - r))


def _pooled_lag1(Q: np.ndarray, fin: np.ndarray, enough: np.ndarray) -> float:
    """Median over units of the lag-1 autocorrelation of their excess ``Q`` (steps x units); 0 if unknown.

    Only units with at least five values; steps missing for a unit break its pairs (NaN). O(steps x units).
    """
    if Q.shape[0] < 3 or not enough.any():
        return 0.0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = Q - np.nanmean(Q, axis=0)
        a, b = z[:-1], z[1:]
        ok = fin[:-1] & fin[1:]
        num = np.where(ok, a * b, 0.0).sum(axis=0)
        den = np.where(fin, z * z, 0.0).sum(axis=0)
        r = num / den
    r = r[enough & np.isfinite(r)]
    return float(np.median(r)) if r.size else 0.0


_GAUSS_STATES = 100  # Markov-chain states of the rank CUSUM's run-length computation (Brook & Evans 1972)


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, vectorised (no scipy)."""
    return 0.5 * (1.0 + _ERF(x / math.sqrt(2.0)))


_ERF = np.vectorize(math.erf, otypes=[float])


def clipped_gauss_arl(k: float, h: float, c: float, mu: float = 0.0, states: int = _GAUSS_STATES) -> float:
    """Average run length (steps) from zero of the CUSUM ``S = max(0, S + z - k)``, alarm at ``S >= h``, where
    ``z = clip(N(mu, 1), -c, c)`` is i.i.d. (everything in sigmas).

    Brook & Evans (*Biometrika* 59, 1972): the CUSUM on ``states`` cells of width ``h / states`` is a Markov
    chain; the run lengths from each cell solve ``(I - P) L = 1``. The transition probabilities depend only
    on the difference of the cells, so one vector of ``2 states`` normal probabilities fills ``P``. ``inf``
    when the chain cannot reach ``h`` (``k >= c``).
    """
    if k >= c:
        return math.inf
    w = h / states
    d = np.arange(-states, states + 1)
    y = (d + 0.5) * w + k  # S' in cell <= j  <=>  z <= (j - i + 0.5) w + k
    cdf = np.where(y < -c, 0.0, np.where(y >= c, 1.0, _phi(y - mu)))
    i = np.arange(states)
    diff = i[None, :] - i[:, None] + states  # index of (j - i) in d
    upto = cdf[diff]
    p = np.empty((states, states))
    p[:, 0] = upto[:, 0]
    p[:, 1:] = np.diff(upto, axis=1)
    try:
        run = np.linalg.solve(np.eye(states) - p, np.ones(states))
    except np.linalg.LinAlgError:
        return math.inf
    return float(run[0]) if run[0] > 0 else math.inf


@lru_cache(maxsize=1024)
def clipped_gauss_h(k: float, c: float, arl0: float) -> float:
    """The decision interval (sigmas) of :func:`clipped_gauss_arl`'s CUSUM whose in-control average run length is
    ``arl0`` steps: bisection to 0.5 % (about 30 solves of a 100-state chain, on one BLAS thread; cached, so
    callers round ``k``, ``c`` and ``arl0``). At least ``c``: one clipped step never alarms alone.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        lo, hi = c, max(2 * c, 4.0)
        if clipped_gauss_arl(k, lo, c) >= arl0:
            return lo
        while clipped_gauss_arl(k, hi, c) < arl0:
            lo, hi = hi, 2 * hi
        while hi - lo > 0.005 * hi:
            mid = (lo + hi) / 2
            if clipped_gauss_arl(k, mid, c) < arl0:
                lo = mid
            else:
                hi = mid
    return hi


def _sig2(x: float) -> float:
    """``x`` rounded to two significant digits (cache keys of the run-length computations)."""
    return float(f"{x:.2g}")


#: Steps of each unit's evidence kept for the minimum-effect rule's change point (:meth:`PeerTracker._effect`):
#: the longest delay issue 18 bounds (one rank 2x on 1 step in 5, named within 60 steps).
_GATE_WINDOW = 60

_BERN_GRID = 4  # Markov-chain states per "not slow" decrement of the Bernoulli CUSUM (Brook & Evans 1972)


@lru_cache(maxsize=256)
def bernoulli_arl(p0: float, p1: float, h: float, p: float | None = None) -> float:
    """Average run length (steps) of the Bernoulli CUSUM of :meth:`PeerTracker._bernoulli` from zero.

    Increments ``log(p1 / p0)`` on a slow step (probability ``p``, default ``p0``: in control) and
    ``log((1 - p1) / (1 - p0))`` otherwise, floored at 0, alarm at ``h``. Computed exactly on a Markov chain
    whose states are the CUSUM in units of a quarter of the decrement (Brook & Evans, *Biometrika* 59, 1972;
    the up-step rounded to that grid), by one linear solve over ``ceil(h / decrement) x 4`` states.
    """
    p = p0 if p is None else p
    up, down = math.log(p1 / p0), -math.log((1 - p1) / (1 - p0))
    n = max(1, math.ceil(h / down * _BERN_GRID))
    m = max(1, round(up / down * _BERN_GRID))
    q = np.zeros((n, n))
    i = np.arange(n)
    jump = i + m < n
    q[i[jump], i[jump] + m] += p
    q[i, np.maximum(i - _BERN_GRID, 0)] += 1 - p
    return float(np.linalg.solve(np.eye(n) - q, np.ones(n))[0])


@lru_cache(maxsize=256)
def bernoulli_h_for_arl(p0: float, p1: float, arl0: float) -> float:
    """The decision interval of the Bernoulli CUSUM whose in-control average run length is ``arl0`` steps
    (:func:`bernoulli_arl`), at most Wald's bound ``log(arl0)`` (which guarantees at least ``arl0`` and is
    far above it: ``log(10^5)`` gives 3 x 10^6 steps at ``p0`` = 0.02, ``p1`` = 0.1).

    The chain's run length depends on the interval only through its number of states, so the search is a
    bisection over that integer (about ten linear solves) and the interval returned lies in the middle of
    the smallest state count that reaches ``arl0``. The solves run on one BLAS thread (threadpoolctl): a
    small dense solve gains nothing from more, and a BLAS pool contending for a loaded machine's cores
    made ``diag slow`` take minutes.
    """
    down = -math.log((1 - p1) / (1 - p0))
    width = down / _BERN_GRID  # the interval's resolution: one state of the chain

    def arl(n: int) -> float:
        return bernoulli_arl(p0, p1, (n - 0.5) * width)

    from threadpoolctl import threadpool_limits

    wald = math.log(arl0)
    with threadpool_limits(limits=1, user_api="blas"):
        lo, hi = 0, max(1, math.ceil(wald / width))  # arl(lo) < arl0 <= arl(hi), unless even Wald's is short
        if arl(hi) < arl0:
            return wald
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if arl(mid) < arl0:
                lo = mid
            else:
                hi = mid
    return min((hi - 0.5) * width, wald)


class PeerTracker:
    """Per-unit, per-kind baseline + CUSUM over peer evidence, with bounded state.

    The first ``baseline_steps`` steps it is given are its baseline window: each unit's median
    normalised excess ``b`` and its robust sigma are learned there (the sigma is at least the pooled
    median sigma of all units; units with fewer than five values, or joining later, get the pooled sigma
    and ``b = 0``). A unit whose baseline excess is at least ``structural_effect`` is reported at once as
    a straggler *present from the start*. After the window, the CUSUM runs on
    ``clip(q - max(b, 0), +-c sigma)`` with reference ``k``, clip ``c`` and interval ``h`` from
    :meth:`_interval` (one pooled sigma per kind; ``b`` a running Huber mean over quiet steps,
    :meth:`_relearn`), and a unit alarms only when the mean of its excess since the CUSUM's last zero is at
    least ``min_effect`` step times (the minimum effect):
    a rank that has always been a bit slower (rank 0 writing logs and metrics) is not an alarm; a rank
    that becomes slower is.
    """

    def __init__(self, cfg: SlowConfig, capacity: int = 64) -> None:
        self.cfg = cfg
        self.cap = 0
        for name, dt in _ARRAYS:
            setattr(self, name, np.zeros((3, 0), dt))
        self.records: dict[tuple[int, int], UnitRecord] = {}
        self.learn_left = cfg.baseline_steps
        self._bufs: np.ndarray | None = None
        self._buf_steps: list[int] = []
        self._buf_kinds: set[int] = set()
        self.rho = np.zeros(3)  # pooled lag-1 autocorrelation of the quiet units' excess per kind (running)
        # the pooled scale: per step, the median over units of |q - max(b, 0)|; its median over the last
        # rank_scale_steps steps x mad_scale is the sigma every unit's evidence is standardised by
        self._absdev = np.full((3, cfg.rank_scale_steps), np.nan)
        self._absdev_n = np.zeros(3, np.int64)
        self.scale = np.zeros(3)
        self.h_now = np.full(3, cfg.rank_h)  # each kind's current decision interval (step times)
        # the pooled lag-1 autocovariance and variance of the quiet units' clipped excess, running means
        self._ac = np.zeros((3, 2))
        self._ac_n = np.zeros(3)
        self.n_kinds = 0
        self.n_units = 0
        # the units' current spread: 1.4826 x MAD of their excesses per step, the last noise_window steps
        self._disp = np.full((3, cfg.noise_window), np.nan)
        self._disp_n = np.zeros(3, np.int64)
        # the pooled rate of "slow steps" (see _bernoulli) among units that have not alarmed, per kind
        self.p_hit = np.zeros(3)
        self.p_n = np.zeros(3)
        # each unit's last _GATE_WINDOW steps of clipped evidence (NaN outside its CUSUM runs), a ring by step
        self._hist = np.full((3, 0, _GATE_WINDOW), np.nan, np.float32)
        self._grow(capacity)

    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        new = max(need, 2 * self.cap, 16)
        for name, dt in _ARRAYS:
            a = getattr(self, name)
            b = np.zeros((3, new), dt)
            if name == "first_seen":
                b[:] = -1
            if name == "prev":
                b[:] = np.nan
            b[:, : a.shape[1]] = a
            setattr(self, name, b)
        hist = np.full((3, new, _GATE_WINDOW), np.nan, np.float32)
        hist[:, : self._hist.shape[1]] = self._hist
        self._hist = hist
        self.cap = new

    @property
    def learning(self) -> bool:
        """True while the baseline window is being collected."""
        return self.learn_left > 0

    def update(
        self,
        step: int,
        units: np.ndarray,
        evidence: dict[int, PhaseEvidence],
        make_evidence: Callable[[int, int], StepEvidence],
        cost: float | None = None,
    ) -> list[UnitRecord]:
        """Add one step's evidence. ``units``: dense unit indices; ``evidence``: kind index -> arrays over ``units``.

        ``make_evidence(position, kind_index)`` builds the evidence of the unit at ``position`` in ``units``.
        ``cost``: how much longer than its baseline the job's step was, in step times (``1 - baseline / T``,
        >= 0), when the ranks run synchronously; a unit's evidence is capped at it, because a rank that is
        slower than its peers while the step is not slower costs nothing (on a shared host, one process
        taking CPU from another). None = no cap (asynchronous workers, or no job baseline yet).
        Returns the records of the units that alarmed at this step (including, at the end of the baseline
        window, the units slow from the start).
        """
        if units.size == 0:
            return []
        self._grow(int(units.max()) + 1)
        for j in evidence:
            fs = self.first_seen[j, units]
            if (fs < 0).any():
                self.first_seen[j, units] = np.where(fs < 0, step, fs)
                self.n_units = int((self.first_seen >= 0).any(axis=0).sum())
        if self.learning:
            self._remember(step, units, evidence)
            self.learn_left -= 1
            if self.learn_left == 0:
                return self._finish_baseline(step, units, evidence, make_evidence)
            return []
        return self._cusum(step, units, evidence, make_evidence, cost)

    def _remember(self, step: int, units: np.ndarray, evidence: dict[int, PhaseEvidence]) -> None:
        """Store one baseline-window step in dense (kind, field, step, unit) float32 buffers."""
        row = self.cfg.baseline_steps - self.learn_left
        if self._bufs is None or self._bufs.shape[3] < self.cap:
            grown = np.full((3, 4, self.cfg.baseline_steps, self.cap), np.nan, np.float32)
            if self._bufs is not None:
                grown[..., : self._bufs.shape[3]] = self._bufs
            self._bufs = grown
        self._buf_steps.append(step)
        for j, ev in evidence.items():
            self._buf_kinds.add(j)
            for f, a in enumerate((ev.q, ev.ex, ev.log_ratio, ev.excess_s)):
                self._bufs[j, f, row, units] = a

    def _finish_baseline(self, step: int, units: np.ndarray, evidence: dict[int, PhaseEvidence],
                         make_evidence: Callable[[int, int], StepEvidence]) -> list[UnitRecord]:
        cfg = self.cfg
        new: list[UnitRecord] = []
        assert self._bufs is not None
        bufs = self._bufs[..., : self.cap].astype(np.float64)
        steps = np.array(self._buf_steps, dtype=np.int64)[:, None]
        pos_of = np.full(self.cap, -1, np.int64)
        pos_of[units] = np.arange(units.size)
        for j in sorted(self._buf_kinds):
            Q, EX, LR, EXC = bufs[j]
            fin = np.isfinite(Q)
            cnt = fin.sum(axis=0)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(Q, axis=0)
            enough = cnt >= 5
            self.base[j] = np.where(enough, np.nan_to_num(med), 0.0)
            self.rho[j] = _pooled_lag1(Q, fin, enough)
            self._ac_n[j] = len(self._buf_steps)
            self.nb[j] = np.where(enough, cnt, 0)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                rows = np.nanmedian(np.abs(Q - np.maximum(self.base[j], 0.0)), axis=1)
            for v in rows[np.isfinite(rows)]:
                self._push_absdev(j, float(v))
            self.scale[j] = self._pooled_scale(j)
            self._ac[j] = (self.rho[j] * self.scale[j] ** 2, self.scale[j] ** 2)
            self.h_now[j] = self._interval(j, self.scale[j])[2]
            structural = enough & (self.base[j] >= cfg.structural_effect)
            self.structural[j] = structural
            for uu in np.nonzero(structural)[0]:
                uu = int(uu)
                rec = UnitRecord(unit=uu, kind=KINDS[j], first_step=int(self.first_seen[j, uu]), detected_at=step,
                                 h=float(self.h_now[j]), present_at_start=True, peak=float(self.h_now[j]))
                if pos_of[uu] >= 0 and j in evidence:
                    rec.evidence.append(make_evidence(int(pos_of[uu]), j))
                    self.n_ev[j, uu] = 1
                self.records[(uu, j)] = rec
                self.alarmed[j, uu] = True
                new.append(rec)
            self.start[j, structural] = self.first_seen[j, structural]
            if structural.any():  # the window's own steps count towards their statistics
                sl = structural
                slow = fin[:, sl] & (EX[:, sl] >= cfg.min_effect) & (Q[:, sl] > 0)
                self.n[j, sl] += cnt[sl]
                self.nslow[j, sl] += slow.sum(axis=0)
                self.slr[j, sl] += np.where(slow, LR[:, sl], 0.0).sum(axis=0)
                self.exc[j, sl] += np.maximum(np.nan_to_num(EXC[:, sl]), 0.0).sum(axis=0)
                self.last_slow[j, sl] = np.where(slow, steps, -1).max(axis=0)
        self.n_kinds = len(self._buf_kinds)
        self._bufs, self._buf_steps, self._buf_kinds = None, [], set()
        return new

    def _push_absdev(self, j: int, v: float) -> None:
        self._absdev[j, self._absdev_n[j] % self.cfg.rank_scale_steps] = v
        self._absdev_n[j] += 1

    def _pooled_scale(self, j: int) -> float:
        """``mad_scale`` x the median of the last ``rank_scale_steps`` per-step medians of |q - max(b, 0)|."""
        col = self._absdev[j][np.isfinite(self._absdev[j])]
        return self.cfg.mad_scale * median(col) if col.size else 0.0

    def _interval(self, j: int, sig: float) -> tuple[float, float, float]:
        """Reference ``k``, clip and decision interval ``h`` of kind ``j`` at scale ``sig``, in step times.

        ``k = max(rank_k_sigma x sig, rank_k_effect x min_effect)`` (Page: half the shift to find, the
        minimum effect, and at least half a sigma); the per-step evidence is clipped at
        ``+-max(rank_clip, rank_clip_sigma x sig, 2 k)``; ``h`` is the interval whose in-control average run
        length for i.i.d. Gaussian evidence so clipped is ``rank_arl0 x units x kinds`` steps
        (:func:`clipped_gauss_h`; a job-wide budget split over every unit and kind tested), times the
        AR(1) long-run factor of the kind's excess, and at least ``rank_h`` step times.
        """
        cfg = self.cfg
        if not sig > 0:
            return cfg.rank_k_effect * cfg.min_effect, cfg.rank_clip, cfg.rank_h
        ks = max(cfg.rank_k_sigma, cfg.rank_k_effect * cfg.min_effect / sig)
        cs = max(cfg.rank_clip_sigma, 2 * ks, cfg.rank_clip / sig)
        units = max(1, self.n_units)
        arl0 = cfg.rank_arl0 * units * max(1, self.n_kinds)
        # beyond k + 8 sigmas a normal law has no mass that matters (< 1e-15): a clip there, or a reference
        # past 8 sigmas (a very quiet job), changes nothing, and capping them keeps the cache small
        hs = cs if ks >= 8 else clipped_gauss_h(_sig2(ks), _sig2(min(cs, ks + 8)), _sig2(arl0))
        h = max(cfg.rank_h, hs * sig * float(self._ar_factor()[j]))
        return ks * sig, cs * sig, h

    def _ar_factor(self) -> np.ndarray:
        """:func:`ar1_long_run_factor` of each kind's pooled lag-1 autocorrelation (length 3)."""
        return ar1_long_run_factor(self.rho)

    def _cusum(self, step: int, units: np.ndarray, evidence: dict[int, PhaseEvidence],
               make_evidence: Callable[[int, int], StepEvidence], cost: float | None) -> list[UnitRecord]:
        """One CUSUM step for every (kind, unit) at once: arrays of shape (3, units)."""
        cfg = self.cfg
        n = units.size
        nan = np.full(n, np.nan)
        Q = np.stack([evidence[j].q if j in evidence else nan for j in range(3)])
        EX = np.stack([evidence[j].ex if j in evidence else nan for j in range(3)])
        LR = np.stack([evidence[j].log_ratio if j in evidence else nan for j in range(3)])
        EXC = np.stack([evidence[j].excess_s if j in evidence else nan for j in range(3)])
        contiguous = bool(n and units[0] == 0 and units[-1] == n - 1 and n <= self.cap and (np.diff(units) == 1).all())
        u = slice(0, n) if contiguous else units
        valid = np.isfinite(Q)
        base, structural = self.base[:, u], self.structural[:, u]
        # In-control estimates (each unit's baseline, the kind's pooled scale and autocorrelation) learn only
        # from units whose CUSUM was at zero before this step (nothing suggests they have shifted; the
        # selection is on past steps, not on this step's value), and not at all in a kind where at least half
        # the units' CUSUMs are above zero: from there the peers' median can be carried by the shifted units
        # (its breakdown point), so every other unit's excess mirrors theirs (a slow node of two among four
        # ranks; the other node of a pair). Standard practice for a CUSUM: the in-control estimates do not
        # adapt on data that may be out of control.
        s_prev = self.S[:, u]
        in_ctl = valid & ~self.alarmed[:, u] & ~structural & (s_prev <= 0)
        in_ctl &= (2 * (valid & (s_prev > 0)).sum(axis=1) < valid.sum(axis=1))[:, None]
        # the ranks' recent spread, over the units below half their interval at the last step: it measures the
        # current conditions (ranks drifting apart while other work takes CPU from some), not an in-control
        # estimate, so it is not frozen (freezing it on the rule above lowered it just in such spells: the
        # largest clean CUSUM on the dev feeds rose from 0.79 to 0.89 of its interval)
        recent, now = self._current_spread(Q, valid & ~self.alarmed[:, u] & (s_prev < 0.5 * self.h_now[:, None]))
        now[1] = 0.0  # communication: a victim's waits widen the spread whenever anyone is late
        # one sigma per kind: the pooled scale of the units' excess, at least the ranks' recent spread
        sig3 = np.maximum(self.scale, np.maximum(recent, now * cfg.spread_now))
        design = np.array([self._interval(j, float(sig3[j])) for j in range(3)])  # (k, clip, h) per kind
        k, clip, h = design[:, 0:1], design[:, 1:2], design[:, 2:3]
        self.h_now = design[:, 2].copy()
        gate_clip = np.maximum(cfg.rank_clip, clip)
        b_pos = np.maximum(base, 0.0)  # a rank normally below its peers is not credited for catching up with them
        with np.errstate(invalid="ignore"):
            r = Q - b_pos
            s = np.clip(r, -clip, clip)
            g = np.clip(r, -gate_clip, gate_clip)  # the evidence the minimum-effect rules average
            if cost is not None:
                s = np.minimum(s, cost)
                g = np.minimum(g, cost)
            b_slow = np.where(structural, 0.0, b_pos)
            slow_all = valid & ((EX - b_slow) >= cfg.min_effect) & ((Q - b_slow) > 0)
        s_old = self.S[:, u]
        s_new = np.where(valid, np.maximum(0.0, s_old + np.nan_to_num(s) - k), s_old)
        # A group shift: at least half the units past half their interval at once. The peers' median then no
        # longer tells any of them from the others (its breakdown point): a slow node is the node test's to
        # name, and two ranks sharing a core with two others (one pair slower, the other faster) nobody's.
        # Their CUSUMs restart from zero, as after a signal. "Half their interval" is the interval at the pooled
        # scale alone: the ranks' recent spread, which such a shift itself raises, would hide the group.
        h_in = np.array([self._interval(j, float(self.scale[j]))[2] for j in range(3)])[:, None]
        high = valid & (s_new >= 0.5 * h_in) & ~self.alarmed[:, u]
        grp = 2 * high.sum(axis=1) >= np.maximum(valid.sum(axis=1), 3)
        if grp.any():
            s_new = np.where(high & grp[:, None], 0.0, s_new)
            self.B[:, u] = np.where(high & grp[:, None], 0.0, self.B[:, u])
        started = valid & (s_old <= 0) & (s_new > 0) & ~structural
        ended = valid & (s_old > 0) & (s_new <= 0) & ~structural
        alarmed = self.alarmed[:, u]
        n_arr, nslow, slr, exc, peak, last_slow = (self.n[:, u], self.nslow[:, u], self.slr[:, u], self.exc[:, u],
                                                   self.peak[:, u], self.last_slow[:, u])
        usum = self.usum[:, u]
        if ended.any():
            for j, p in zip(*np.nonzero(ended & alarmed), strict=True):
                self._fold(int(units[p]), int(j), active=False, live=(n_arr[j, p], nslow[j, p], slr[j, p], exc[j, p],
                                                                      peak[j, p], last_slow[j, p]))
        reset = started | ended
        if reset.any():
            for a in (n_arr, nslow, slr, exc, peak, usum):
                a[reset] = 0
        if started.any():
            start = self.start[:, u]
            start[started] = step
            self.start[:, u] = start
            for j, p in zip(*np.nonzero(started & alarmed), strict=True):
                self.records[(int(units[p]), int(j))].active = True
        act = valid & ((s_new > 0) | structural)
        slow = slow_all & act
        n_arr += act
        nslow += slow
        slr += np.where(slow, np.nan_to_num(LR), 0.0)
        exc += np.where(act, np.maximum(np.nan_to_num(EXC), 0.0), 0.0)
        usum += np.where(act, np.nan_to_num(g), 0.0)
        peak[...] = np.where(act, np.maximum(peak, s_new), peak)
        last_slow[...] = np.where(slow, step, last_slow)
        self.n[:, u], self.nslow[:, u], self.slr[:, u], self.exc[:, u] = n_arr, nslow, slr, exc
        self.peak[:, u], self.last_slow[:, u], self.S[:, u], self.usum[:, u] = peak, last_slow, s_new, usum
        learn = in_ctl
        if cost is not None:  # a step whose evidence the cost cap held back says nothing about the unit's baseline
            with np.errstate(invalid="ignore"):
                learn = in_ctl & ~(r > cost)
        self._relearn(u, in_ctl, learn, Q, base, b_pos, clip)
        # minimum effect: the run that crossed h must cost at least min_effect step times per step on average
        big = usum >= cfg.min_effect * np.maximum(n_arr, 1)
        # a run must last rank_min_steps, unless its mean excess is already large (rank_fast_effect step times)
        lasting = (n_arr >= cfg.rank_min_steps) | (usum >= cfg.rank_fast_effect * np.maximum(n_arr, 1))
        self._hist[:, u, step % _GATE_WINDOW] = np.where(act, np.nan_to_num(g), np.nan)
        cand = act & (s_new > 0) & (s_new >= h) & lasting & ~big & ~alarmed
        if cand.any():  # the run crossed h but its mean since the CUSUM's last zero is below min_effect
            for j, p in zip(*np.nonzero(cand), strict=True):
                big[j, p] = self._effect(j, int(units[p]), step, int(n_arr[j, p]), float(usum[j, p])) >= cfg.min_effect
        fire = act & (s_new > 0) & (s_new >= h) & big & lasting & ~alarmed
        fire |= self._bernoulli(step, u, units, valid, Q - b_pos, self.scale[:, None], structural, alarmed, cost)
        new: list[UnitRecord] = []
        if fire.any():
            for j, p in zip(*np.nonzero(fire), strict=True):
                uu, jj = int(units[p]), int(j)
                rec = UnitRecord(unit=uu, kind=KINDS[jj], first_step=int(self.start[jj, uu]), detected_at=step,
                                 h=float(self.h_now[jj]))
                rec.evidence.append(make_evidence(int(p), jj))
                self.records[(uu, jj)] = rec
                self.alarmed[jj, uu] = True
                self.n_ev[jj, uu] = 1
                new.append(rec)
        more = slow & alarmed & ~fire
        if more.any():
            n_ev = self.n_ev[:, u]
            for j, p in zip(*np.nonzero(more & (n_ev < cfg.max_evidence)), strict=True):
                uu, jj = int(units[p]), int(j)
                self.records[(uu, jj)].evidence.append(make_evidence(int(p), jj))
                self.n_ev[jj, uu] += 1
        return new

    def _effect(self, j: int, unit: int, step: int, n: int, usum: float) -> float:
        """The mean excess of a unit's run after its most likely change point (step times per step).

        The CUSUM's own change-point estimate, its last zero, is the maximum-likelihood one for a shift of
        the design size ``2 k``; a run whose CUSUM was already above zero when the unit slowed down (noise
        left it there) starts before the change, and the mean since then understates the effect (a 1.3x
        straggler's 0.13 step read as 0.07 over a run that began 8 steps before it, dev draw). With the
        shift size unknown the maximum-likelihood change point of a normal mean is the one that maximises
        ``(sum of the evidence after it)^2 / (steps after it)`` (Hinkley, *Biometrika* 57, 1970), and the
        effect is the mean after it. Searched over the run's last ``_GATE_WINDOW`` steps and its start.
        """
        m = min(n, _GATE_WINDOW)
        idx = (step - np.arange(m)) % _GATE_WINDOW  # newest first
        x = self._hist[j, unit, idx].astype(np.float64)
        x = np.nan_to_num(x)
        tail = np.cumsum(x)  # sum of the last 1..m steps
        length = np.arange(1, m + 1)
        best_sum, best_len = (usum, n) if usum > 0 else (0.0, 1)
        score = np.where(tail > 0, tail * tail / length, 0.0)
        i = int(np.argmax(score))
        if score[i] > best_sum * best_sum / best_len:
            best_sum, best_len = float(tail[i]), int(length[i])
        return best_sum / best_len

    def _relearn(self, u: slice | np.ndarray, quiet: np.ndarray, learn: np.ndarray, Q: np.ndarray, base: np.ndarray,
                 b_pos: np.ndarray, clip: np.ndarray) -> None:
        """Update each in-control unit's baseline and the pooled scale with this step (shape (3, units) masks).

        ``quiet``: the units in control (see :meth:`_cusum`: not alarmed, not slow from the start, CUSUM at zero
        before this step, and fewer than half the kind's units with a positive CUSUM); a baseline learns
        (``learn``) only when the cost cap also did not hold its evidence back (a group of two slower than
        the other while the step is not longer: learning from it would fold a slow node into its
        baseline). The baseline ``b`` is a running Huber mean of the excess (``b += clip(q - b) / n``, ``n``
        the steps learned, at most ``rank_base_steps``): the 20-step window's median is off by 0.28 sigma
        (sd), half the reference ``k`` (a rank whose window ran low drifts towards ``h`` at clean noise).
        The pooled scale takes this step's median over the in-control units of |q - max(b, 0)|, and the
        lag-1 autocorrelation their lag products over consecutive in-control steps.
        """
        cfg = self.cfg
        nb = self.nb[:, u]
        nb = np.where(learn, np.minimum(nb + 1, cfg.rank_base_steps), nb)
        with np.errstate(invalid="ignore"):
            step_ = np.clip(np.nan_to_num(Q - base), -clip, clip) / np.maximum(nb, 1)
        self.base[:, u] = np.where(learn, base + step_, base)
        self.nb[:, u] = nb
        with np.errstate(invalid="ignore"):
            r = np.clip(Q - b_pos, -clip, clip)
        prev = self.prev[:, u]
        # the pooled statistics from at most ~2,048 evenly spaced units (at 10,000 ranks a median of a
        # fifth of them per step, itself a median over 100 steps, is as good and five times cheaper)
        sub = slice(None, None, max(1, Q.shape[1] // 2048))
        for j in range(3):
            if not quiet[j].any():  # no unit in control (or half of the kind's CUSUMs above zero, see _cusum)
                continue
            qj, rj, pj = quiet[j, sub], r[j, sub], prev[j, sub]
            row = np.abs(rj[qj])
            if row.size:
                self._push_absdev(j, median(row))
                self.scale[j] = self._pooled_scale(j)
            pair = qj & np.isfinite(pj)
            if pair.any():  # the lag-1 autocorrelation, pooled over units, as running means (Box & Jenkins)
                self._ac_n[j] = min(self._ac_n[j] + 1, cfg.rank_scale_steps)
                a, b = rj[pair], pj[pair]
                now = (float(np.mean(a * b)), float(np.mean(a * a)))
                self._ac[j] += (np.array(now) - self._ac[j]) / self._ac_n[j]
                self.rho[j] = self._ac[j, 0] / self._ac[j, 1] if self._ac[j, 1] > 0 else 0.0
        self.prev[:, u] = np.where(quiet, r, np.nan)

    def _bernoulli(self, step: int, u: slice | np.ndarray, units: np.ndarray, valid: np.ndarray, excess: np.ndarray,
                   sig: np.ndarray, structural: np.ndarray, alarmed: np.ndarray, cost: float | None) -> np.ndarray:
        """Recurring slow steps: a Bernoulli CUSUM per (kind, unit) on "this step is slow" (shape (3, units)).

        A step is slow for a unit when its excess over its baseline is at least
        ``max(intermittent_effect, intermittent_sigmas x sigma)`` step times (``sigma``: the kind's pooled
        scale; and, in a synchronous job, the step itself cost that much). Under control every unit is slow
        with the pooled rate ``p0`` of the units that have not alarmed (Laplace-smoothed, at least
        ``intermittent_p0_min``), counted over the *other* units (leave-one-out: a unit's own slow steps
        are not part of the in-control rate it is tested against, see below); the CUSUM tests it against
        ``p1 = max(intermittent_p1, 3 p0)`` with
        log-likelihood-ratio increments (Reynolds & Stoumbos 1999, the Bernoulli CUSUM) and alarms at the
        interval whose in-control average run length is ``intermittent_arl0`` steps, computed exactly
        (:func:`bernoulli_h_for_arl`; Wald's ``log(arl0)``, used before, guarantees it with a run length
        some 30 times longer, and detects later). Returns
        the units that alarm here.

        Why leave-one-out (issue 18, 2026-12-04, dev feeds): the pooled rate counted every unit that had not
        alarmed, so a rank slow on one step in five raised the ``p0`` it was itself tested against from the
        onset on (4 ranks: 0.021 -> 0.038 and 0.033 -> 0.050 over its first 45-70 steps in two dev draws),
        and ``p0`` is what sets this test's speed (exact run lengths at a true rate of 0.17: 35 steps at
        ``p0`` = 0.01, 50 at 0.02, 68 at 0.033). The in-control rate of a unit is estimated from data that
        is in control under the hypothesis tested, its peers' -- the same rule as the rank CUSUM's
        in-control estimates (:meth:`_cusum`). ``p0`` and ``p1`` are rounded to two significant digits
        before both the increments and the interval, so that the interval is the exact one for the
        increments used.
        """
        cfg = self.cfg
        thr = np.maximum(cfg.intermittent_effect, cfg.intermittent_sigmas * sig)
        with np.errstate(invalid="ignore"):
            z = valid & (excess >= thr)
            if cost is not None:
                z &= cost >= cfg.intermittent_effect
        quiet = valid & ~alarmed & ~structural
        own_hit, own_n = self.own_hit[:, u], self.own_n[:, u]
        raw = np.clip((self.p_hit[:, None] - own_hit + 1) / (self.p_n[:, None] - own_n + 2), cfg.intermittent_p0_min, 0.3)
        up, down, h = self._bernoulli_design(raw)
        b_old = self.B[:, u]
        b_new = np.where(valid, np.maximum(0.0, b_old + np.where(z, up, down)), b_old)
        bstart = self.bstart[:, u]
        bstart[...] = np.where(valid & (b_old <= 0) & (b_new > 0), step, bstart)
        hit_q = z & quiet
        self.p_hit += hit_q.sum(axis=1)
        self.p_n += quiet.sum(axis=1)
        self.own_hit[:, u] = own_hit + hit_q
        self.own_n[:, u] = own_n + quiet
        # a group shift (see _cusum): half the units past half the interval at once restart from zero
        high = valid & (b_new >= 0.5 * h) & ~alarmed & ~structural
        grp = 2 * high.sum(axis=1) >= np.maximum(valid.sum(axis=1), 3)
        if grp.any():
            b_new = np.where(high & grp[:, None], 0.0, b_new)
        self.B[:, u], self.bstart[:, u] = b_new, bstart
        fire = valid & (b_new >= h) & ~alarmed & ~structural
        if fire.any():  # the run starts where the Bernoulli CUSUM last left zero
            start = self.start[:, u]
            start[...] = np.where(fire & (self.S[:, u] <= 0), bstart, start)
            self.start[:, u] = start
        return fire

    def _bernoulli_design(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Increments (up, down) and the exact interval of each unit's Bernoulli CUSUM, from its ``p0`` (shape
        (3, units)): ``p0`` to two significant digits, ``p1 = max(intermittent_p1, 3 p0)`` likewise, ``h`` for
        ``intermittent_arl0`` (:func:`bernoulli_h_for_arl`, cached). Per kind the rounded values are few, so
        the logs and intervals are computed once per distinct value and looked up (at 10,000 ranks a log per
        unit and a sort cost more than the rest of the test).
        """
        cfg = self.cfg
        up, down, h = (np.empty_like(raw) for _ in range(3))
        for j in range(3):
            r = raw[j]
            if r.size == 0:
                continue
            # two significant digits as integer multiples of the lowest decade's scale (no log per unit)
            lo, hi = np.floor(np.log10([r.min(), r.max()]))
            scale = 10.0 ** (lo - 1)
            codes = np.rint(r / scale).astype(np.int64)
            for d in range(1, int(hi - lo) + 1):  # values a decade or more higher: coarser digits
                m = codes >= 10 ** (d + 1)
                codes[m] = np.rint(r[m] / (scale * 10**d)).astype(np.int64) * 10**d
            present = np.flatnonzero(np.bincount(codes))
            vals, inv = present * scale, np.searchsorted(present, codes)
            p0 = np.array([_sig2(float(v)) for v in vals])
            p1 = np.array([_sig2(min(max(cfg.intermittent_p1, 3 * a), 0.9)) for a in p0])
            hv = np.array([bernoulli_h_for_arl(a, b, cfg.intermittent_arl0) for a, b in zip(p0, p1, strict=True)])
            inv = inv.reshape(-1)
            up[j], down[j], h[j] = np.log(p1 / p0)[inv], np.log((1 - p1) / (1 - p0))[inv], hv[inv]
        return up, down, h

    def _current_spread(self, Q: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The units' recent spread per kind (length 3; 0 where unknown), after adding this step's.

        Per step and kind, ``1.4826 x MAD`` of the units' excesses (at least three units); the result is the
        median of the last ``noise_window`` steps' values. One straggler among four or more units hardly
        moves a MAD; what raises it is several units at once drifting apart, as when other work on a shared
        host takes CPU from some of the ranks (two of four ranks 1.3x slower than the other two for ten
        steps). Using it as a floor on a unit's sigma keeps that from reading as a straggler. O(units).
        """
        cfg = self.cfg
        d = np.full(3, np.nan)
        for j in range(3):
            row = Q[j][valid[j]]
            if row.size >= 3:
                m = median(row)
                d[j] = cfg.mad_scale * median(np.abs(row - m))
        for j in np.flatnonzero(np.isfinite(d)):  # a step without three units in control leaves the ring as it is
            self._disp[j, self._disp_n[j] % cfg.noise_window] = d[j]
            self._disp_n[j] += 1
        out = np.zeros(3)
        for j in range(3):
            col = self._disp[j][np.isfinite(self._disp[j])]
            if col.size:
                out[j] = median(col)
        return out, np.nan_to_num(d)

    def _reset(self, j: int, u: np.ndarray) -> None:
        for name in ("n", "nslow", "slr", "exc", "peak", "usum"):
            getattr(self, name)[j, u] = 0

    def _fold(self, u: int, j: int, active: bool, live: tuple[Any, ...]) -> None:
        """Add a finished run's statistics ``(n, nslow, slr, exc, peak, last_slow)`` to the unit's record."""
        rec = self.records[(u, j)]
        n, nslow, slr, exc, peak, last_slow = live
        rec.n += int(n)
        rec.nslow += int(nslow)
        rec.slr += float(slr)
        rec.exc += float(exc)
        rec.peak = max(rec.peak, float(peak))
        rec.last_slow = max(rec.last_slow, int(last_slow))
        rec.active = active

    def snapshot(self) -> list[UnitRecord]:
        """Alarmed records with the live run folded in (copies; the tracker is unchanged)."""
        out = []
        for (u, j), rec in self.records.items():
            r = UnitRecord(**{**rec.__dict__, "evidence": list(rec.evidence)})
            if self.S[j, u] > 0 or self.structural[j, u]:
                r.n += int(self.n[j, u])
                r.nslow += int(self.nslow[j, u])
                r.slr += float(self.slr[j, u])
                r.exc += float(self.exc[j, u])
                r.peak = max(r.peak, float(self.peak[j, u]))
                r.last_slow = max(r.last_slow, int(self.last_slow[j, u]))
                r.active = bool(self.S[j, u] > 0 or r.nslow and r.last_slow >= 0)
            else:
                r.active = False
            out.append(r)
        return out

    @staticmethod
    def confidence(rec: UnitRecord) -> float:
        """``1 - 0.5 ** (peak / h)``: 0.5 at the decision interval, 0.75 at twice it (a heuristic, not calibrated)."""
        return round(min(0.99, 1 - 0.5 ** (max(rec.peak, rec.h) / rec.h)), 3)

    @staticmethod
    def factor(rec: UnitRecord) -> float:
        """Geometric-mean ratio of the unit's phase to its peers' on its slow steps (1.0 if none)."""
        return round(math.exp(rec.slr / rec.nslow), 4) if rec.nslow else 1.0
