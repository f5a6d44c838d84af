"""Job-level fail-slow detection: an adaptive baseline and an online CUSUM change-point detector.

Input: one observation per step, the job's step time ``T`` (seconds per iteration; the median over
ranks of their step durations, or an iteration line's elapsed time). The detector

1. skips ``warmup_steps`` observations, then learns the job's own baseline from the next
   ``baseline_steps`` train steps: the median step time, and the robust sigma of ``log T``
   (1.4826 x MAD). The warm-up is extended while the window still starts with slow steps.
2. excludes evaluation and checkpoint steps: records marked as such, lone outliers (a step slower than
   ``baseline x (1 + max(spike_factor, 6 sigma))`` whose neighbour is not: decided with a one-step delay),
   and, once the outliers repeat at a constant period (``periodic_min_hits`` times), every step of that
   period and phase, without delay;
3. runs a one-sided tabular CUSUM (Page 1954) on ``x = log(T / baseline)`` with reference
   ``k = max(delta / 2, min(job_k_effect x delta, job_k_sigma x sigma_lr))`` (``delta = log(1 + min_effect)``:
   Page's half of the design shift, which is ``min_effect`` on a quiet job and up to twice it on a noisy
   one, so that slowdowns below ``min_effect`` do not accumulate there) and decision interval
   ``h = max(h_arl x sigma_lr, delta)``, where ``sigma_lr`` is the long-run sigma of the
   baseline window (an AR(1) fit: ``sigma x sqrt((1 + rho) / (1 - rho))``, rho clipped to [0, 0.8]) and ``h_arl`` the interval, in
   those sigmas, whose in-control average run length is ``job_arl0`` steps (:func:`cusum_h_for_arl`);
   per-step increments are clipped at
   ``max(3 sigma, 3 log(1 + min_effect))`` so that one outlier cannot alarm alone;
4. opens an episode when the CUSUM exceeds ``h``, the run has lasted ``min_episode_steps`` steps and
   its mean slowdown is at least ``1 + min_effect``. The episode starts at the maximum-likelihood change
   point of the run since the CUSUM's last zero (Hinkley 1971; see :meth:`JobDetector._change_point`),
   and ends when a mirror CUSUM (on ``k - x``) exceeds ``h``
   after at least ``min_recovery_steps`` steps back near the baseline (so that the pauses of an
   intermittent slowdown do not split it); its end is that CUSUM's change-point estimate.

State is O(1) per job (plus the baseline window and a 12-entry outlier history): bounded.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from diag_service.slow.models import BaselineInfo, SlowAlarm, SlowConfig, SlowEpisode, StepEvidence, StragglerKind
from diag_service.slow.rank import ar1_long_run_factor, bernoulli_h_for_arl

PHASES = (StragglerKind.COMPUTE, StragglerKind.COMMUNICATION, StragglerKind.DATA)
_RUN_STEPS_KEPT = 512  # steps of a CUSUM run kept for its change-point estimate (bounded state)
_SIGMA_FLOOR = 0.005  # log-units: 0.5 % noise floor, so that a perfectly regular synthetic feed has a finite scale
_NOISE_WINDOW = 120  # in-control steps the noise is re-estimated on (every _NOISE_EVERY steps, from 40 on)
_NOISE_EVERY = 20
#: Above this share of slow steps a run is a level shift, not a recurrence (the rank level's "intermittent":
#: slow on fewer than 70 % of its steps, models.Straggler.intermittent).
_INTERMITTENT_SHARE = 0.7


def cusum_arl0(k: float, h: float) -> float:
    """In-control average run length (steps) of a one-sided CUSUM on standard normal increments.

    ``k``, ``h``: reference value and decision interval in sigmas. Siegmund's approximation
    ``(exp(2 k b) - 2 k b - 1) / (2 k^2)`` with ``b = h + 1.166`` (Siegmund 1985; for k = 0.5, h = 5 it
    gives about 930 steps, h = 8 about 2 x 10^4).
    """
    if k <= 0:
        return (h + 1.166) ** 2
    a = 2 * k * (h + 1.166)
    return (math.exp(min(a, 700.0)) - a - 1) / (2 * k * k)


def cusum_h_for_arl(k: float, arl0: float) -> float:
    """The decision interval (sigmas) whose :func:`cusum_arl0` is ``arl0`` steps, by bisection."""
    lo, hi = 0.0, 200.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if cusum_arl0(k, mid) < arl0:
            lo = mid
        else:
            hi = mid
    return hi


def _lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation of ``x`` after clipping at 3 robust sigmas (0 for fewer than 5 values)."""
    if x.size < 5:
        return 0.0
    med = float(np.median(x))
    s = 1.4826 * float(np.median(np.abs(x - med))) or 1e-12
    z = np.clip(x - med, -3 * s, 3 * s)
    z = z - z.mean()
    den = float((z * z).sum())
    return float((z[:-1] * z[1:]).sum() / den) if den > 0 else 0.0


@dataclass
class StepCtx:
    """One step as the job detector sees it. ``phases`` = peer medians of (compute, comm, data) seconds."""

    step: int
    T: float
    weight: float = 1.0
    kind: int = 0
    start_time: float | None = None
    end_time: float | None = None
    phases: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    T_max: float = math.nan
    payload: Any = None
    lone_outlier: bool = False  # excluded from the job level as a lone slow step (not a marked/periodic one)
    periodic: bool = False  # excluded from the job level as an unmarked periodic slow step; ranks still compared

    @property
    def ranks_compared(self) -> bool:
        """Kept out of the job level but still compared between ranks (a lone or periodic unmarked slow step)."""
        return self.lone_outlier or self.periodic


@dataclass
class _Acc:
    """Running sums over a run of steps."""

    n: int = 0
    w: float = 0.0
    tw: float = 0.0
    ph: np.ndarray = field(default_factory=lambda: np.zeros(3))
    ph_n: np.ndarray = field(default_factory=lambda: np.zeros(3))
    first_step: int | None = None
    first_time: float | None = None
    last_step: int | None = None
    last_time: float | None = None

    def add(self, c: StepCtx) -> None:
        self.n += 1
        self.w += c.weight
        self.tw += c.T * c.weight
        ph = np.asarray(c.phases, dtype=float)
        ok = np.isfinite(ph)
        self.ph[ok] += ph[ok]
        self.ph_n[ok] += 1
        if self.first_step is None:
            self.first_step, self.first_time = c.step, c.start_time
        self.last_step, self.last_time = c.step, c.end_time

    def sub(self, o: _Acc) -> None:
        self.n -= o.n
        self.w -= o.w
        self.tw -= o.tw
        self.ph -= o.ph
        self.ph_n -= o.ph_n

    def mean_t(self) -> float:
        return self.tw / self.w if self.w > 0 else math.nan


@dataclass
class _Episode:
    start_step: int
    start_time: float | None
    detected_at: int
    acc: _Acc
    evidence: list[StepEvidence]
    end_step: int | None = None
    end_time: float | None = None
    intermittent: bool = False


class JobDetector:
    """Online job-level slowdown detector (see the module docstring). Feed steps in order with :meth:`push`."""

    def __init__(self, cfg: SlowConfig) -> None:
        self.cfg = cfg
        self.delta = math.log1p(cfg.min_effect)
        self.n_obs = 0
        self.warm = 0
        self.buf: deque[StepCtx] = deque()
        self.base: float | None = None
        self.base_max: float | None = None
        self.sigma: float | None = None
        self.rho = 0.0  # lag-1 autocorrelation of log step time in the baseline window
        self._h: float | None = None  # cached decision interval (recomputed when the noise estimate grows)
        # log ratios of recent in-control steps: the noise is re-estimated on them (bounded window)
        self.recent: deque[float] = deque(maxlen=_NOISE_WINDOW)
        self.since_noise = 0
        self.base_first: int | None = None
        self.base_last: int | None = None
        self.phase_base = np.full(3, np.nan)
        self.held: StepCtx | None = None
        self.outliers: deque[int] = deque(maxlen=12)
        self.periodic: list[tuple[int, int]] = []
        # the smallest step gap between consecutive records (a log sampled every N steps has N): a period is a
        # multiple of at least two of them, or every record would be "periodic"
        self.record_gap: int | None = None
        self.prev_step: int | None = None
        self.excluded = 0
        self.S = 0.0
        self.run = _Acc()
        self.R = 0.0
        self.racc = _Acc()
        self.end_candidate: tuple[int | None, float | None] = (None, None)
        self.episode: _Episode | None = None
        self.episodes: list[_Episode] = []
        self.alarms: list[SlowAlarm] = []
        self.last_fed: tuple[int | None, float | None] = (None, None)
        # the current CUSUM run's steps (bounded), for the change-point estimate when an episode opens
        self.run_steps: deque[tuple[float, StepCtx]] = deque()
        self.run_dropped = _Acc()
        # the recurrence test (_rate): a Bernoulli CUSUM on "this step is slow", its run and in-control rate
        self.B = 0.0
        self.b_steps: deque[tuple[float, StepCtx]] = deque(maxlen=_RUN_STEPS_KEPT)
        self.b_hits = 0
        self.b_n = 0
        self.b_quiet = 0  # steps without a slow one since the intermittent episode's last slow step
        self.b_last: tuple[int, float | None] | None = None  # the intermittent episode's last slow step
        self.inter: _Episode | None = None

    # ------------------------------------------------------------------ parameters
    @property
    def k(self) -> float:
        """CUSUM reference value (log units)."""
        return max(self.delta / 2, min(self.cfg.job_k_effect * self.delta, self.cfg.job_k_sigma * self._lr_sigma()))

    def _lr_sigma(self) -> float:
        """Long-run sigma of log step time: the robust sigma x :func:`ar1_long_run_factor` of its rho."""
        return (self.sigma or 0.0) * float(ar1_long_run_factor(self.rho))

    @property
    def h(self) -> float:
        """CUSUM decision interval (log units): set for ``job_arl0`` on the long-run sigma (module docstring)."""
        sigma = self.sigma or 0.0
        if self.cfg.job_h_sigma > 0:
            return max(self.cfg.job_h_sigma * sigma, 2 * self.delta)
        if self._h is None:
            lr = self._lr_sigma()
            self._h = max(cusum_h_for_arl(self.k / lr if lr > 0 else 0.5, self.cfg.job_arl0) * lr, self.delta)
        return self._h

    @property
    def min_ratio(self) -> float:
        """Smallest mean slowdown (ratio to the baseline) that opens an episode.

        ``1 + min_effect``, or ``exp(job_effect_sigma x sigma)`` when the job's own step-to-step noise is
        larger: on a host shared with other work, the pace drifts by about one sigma for tens of steps
        (lab runs: sigma 0.08-0.15 in log units, clean runs 1.1-1.25x slower than their baseline window for
        40-70 steps), and a drift that size is not evidence of a fault.
        """
        return math.exp(max(self.delta, self.cfg.job_effect_sigma * (self.sigma or 0.0)))

    def _gate(self, n: int) -> float:
        """The mean ratio a run of ``n`` steps must reach: :attr:`min_ratio` less two standard errors of the
        run's mean log step time (long-run sigma / sqrt(n)), at most a quarter of ``log(1 + min_effect)``.

        A slowdown of exactly ``min_effect`` has a run mean below ``1 + min_effect`` half of the time; the gate
        asks that the run be *consistent with* the minimum effect (a one-sided test at about 2.5 %), so a
        1.1x slowdown at 1 % noise opens its episode at the third step, not at a lucky later one. The cap keeps
        the gate near ``min_effect`` on a noisy job, where the decision interval does the work.
        """
        tol = min(2 * self._lr_sigma() / math.sqrt(max(n, 1)), self.delta / 4)
        return self.min_ratio * math.exp(-tol)

    def _clip(self) -> float:
        return max(3 * (self.sigma or 0.0), 3 * self.delta)

    # ------------------------------------------------------------------ input
    def push(self, c: StepCtx) -> list[tuple[StepCtx, bool]]:
        """Take the next step (in step order). Returns the steps decided so far as ``(ctx, included)``.

        ``included`` is False for warm-up, evaluation/checkpoint and outlier steps, which the rank-level
        detectors must skip too. A step that looks like an outlier is held back one step (returned with the
        next call, or by :meth:`flush`).
        """
        if self.prev_step is not None and c.step > self.prev_step:
            gap = c.step - self.prev_step
            self.record_gap = gap if self.record_gap is None else min(self.record_gap, gap)
        self.prev_step = c.step
        if c.kind != 0 or not (c.T > 0 and math.isfinite(c.T)):
            self.excluded += 1
            return [(c, False)]
        if self.base is None:
            return self._learn(c)
        self._rate(c)
        if self._periodic_hit(c.step) and not self._is_spike(c.T):
            # a step at the period's phase at the normal pace: the slow steps that made the period were not a phase
            # that recurs (an evaluation or checkpoint is slow every time), they fell on it by chance (a rank
            # stalled at random, one step in a few)
            self.periodic = [(g, r) for g, r in self.periodic if c.step % g != r]
        if self._periodic_hit(c.step):
            # an unmarked step at a recurring period (checkpoint or evaluation as far as the job can tell):
            # kept out of the job's CUSUM, but a rank that is slow on it is still compared with its peers,
            # or a rank throttled every few steps would hide behind the period it creates
            self.excluded += 1
            c.periodic = True
            return [(c, False)]
        spike = self._is_spike(c.T)
        out: list[tuple[StepCtx, bool]] = []
        if self.held is not None:
            held, self.held = self.held, None
            if spike:  # two slow steps in a row: a level shift, not an outlier
                self._feed(held)
                out.append((held, True))
            else:
                self._outlier(held.step)
                held.lone_outlier = True
                out.append((held, False))
        elif spike:
            self.held = c
            return out
        self._feed(c)
        out.append((c, True))
        return out

    def flush(self) -> list[tuple[StepCtx, bool]]:
        """End of input: a held outlier stays an outlier."""
        if self.held is None:
            return []
        held, self.held = self.held, None
        self._outlier(held.step)
        held.lone_outlier = True
        return [(held, False)]

    # ------------------------------------------------------------------ baseline
    def _learn(self, c: StepCtx) -> list[tuple[StepCtx, bool]]:
        cfg = self.cfg
        self.n_obs += 1
        if self.n_obs <= cfg.warmup_steps:
            self.warm += 1
            return [(c, False)]
        if len(self.buf) >= 5:
            med = float(np.median([b.T for b in self.buf]))
            cut = 1 + max(cfg.spike_factor, 3 * cfg.min_effect)
            if c.T > med * cut:
                self._outlier(c.step)
                return [(c, False)]
            if c.T < med / cut:
                # as far below as an outlier is above: left out too, or trimming one side only would put the
                # baseline's median below the job's level on a noisy host (a false episode from the first steps)
                self.excluded += 1
                return [(c, False)]
        self.buf.append(c)
        while len(self.buf) >= cfg.baseline_steps:
            logs = np.log([b.T for b in self.buf])
            med = float(np.median(logs))
            sig = max(cfg.mad_scale * float(np.median(np.abs(logs - med))), _SIGMA_FLOOR)
            first = logs[0]
            if first - med > max(3 * sig, self.delta) and self.warm < cfg.max_warmup_steps:
                self.buf.popleft()  # still warming up
                self.warm += 1
                continue
            self.base, self.sigma = math.exp(med), sig
            self.rho, self._h = _lag1(logs), None
            tmax = [b.T_max for b in self.buf if math.isfinite(b.T_max)]
            self.base_max = float(np.median(tmax)) if tmax else None
            self.base_first, self.base_last = self.buf[0].step, self.buf[-1].step
            ph = np.array([b.phases for b in self.buf], dtype=float)
            with np.errstate(all="ignore"):
                for j in range(3):
                    col = ph[:, j][np.isfinite(ph[:, j])]
                    self.phase_base[j] = float(np.median(col)) if col.size else math.nan
            self.buf.clear()
            break
        return [(c, True)]

    # ------------------------------------------------------------------ outliers
    def _level(self) -> float:
        """Current level (ratio to baseline) that a step must exceed to be an outlier."""
        if self.episode is not None and self.episode.acc.w > 0:
            return max(1.0, self.episode.acc.mean_t() / self.base)  # type: ignore[operator]
        if self.S > 0 and self.run.w > 0:
            return max(1.0, self.run.mean_t() / self.base)  # type: ignore[operator]
        return 1.0

    def _is_spike(self, T: float) -> bool:
        thr = self.base * self._level() * (1 + max(self.cfg.spike_factor, 6 * (self.sigma or 0.0)))  # type: ignore[operator]
        return T > thr

    def _outlier(self, step: int) -> None:
        self.excluded += 1
        self.outliers.append(step)
        if len(self.periodic) >= 4 or len(self.outliers) < self.cfg.periodic_min_hits:
            return
        seen = set(self.outliers)
        for p in sorted(seen, reverse=True):
            g = step - p
            if g < 2 * (self.record_gap or 1) or any(g == gg for gg, _ in self.periodic):
                continue  # a "period" of one record interval would take every record
            # the last periodic_min_hits positions of this period must all have been outliers
            if all(step - i * g in seen for i in range(self.cfg.periodic_min_hits)):
                self.periodic.append((g, step % g))
                return

    def _periodic_hit(self, step: int) -> bool:
        return any(step % g == r for g, r in self.periodic)

    # ------------------------------------------------------------------ recurrence
    def _rate(self, c: StepCtx) -> None:
        """The recurrence test of every train step after the baseline, outliers and periodic steps included.

        The mean CUSUM cannot see an intermittent slowdown: its slow steps are lone outliers, and once they
        recur at a constant period, a phase (a checkpoint or evaluation as far as the job can tell). Here a
        step is *slow* when ``log(T / baseline) >= max(log(1 + 2 min_effect), intermittent_sigmas x sigma)``;
        under control steps are slow at the job's own rate ``p0`` (Laplace-smoothed over the steps where the
        test is near zero, at least ``intermittent_p0_min``: a checkpoint every 40 steps is part of ``p0``),
        tested against ``p1 = max(intermittent_p1, 3 p0)`` with a Bernoulli CUSUM (Reynolds & Stoumbos
        1999) whose interval gives an in-control run length of ``job_arl0`` steps
        (:func:`~diag_service.slow.rank.bernoulli_h_for_arl`, as the rank-level recurrence test). An
        intermittent episode opens when it alarms, the steps since the run's maximum-likelihood start cost at
        least ``min_effect`` on average and at most :data:`_INTERMITTENT_SHARE` of them are slow (more is a
        level shift, the mean test's); it ends after ``max(min_recovery_steps, 4 / p1)`` steps without a slow one.
        A level shift (an open mean episode) is the mean test's and is not counted here.
        """
        if self.base is None:
            return
        if self.episode is not None:
            if self.inter is None:  # the mean test's stretch: the recurrence test starts afresh after it
                self.B = 0.0
                self.b_steps.clear()
            return
        cfg = self.cfg
        hit = math.log(c.T / self.base) >= max(math.log1p(2 * cfg.min_effect), cfg.intermittent_sigmas * (self.sigma or 0.0))
        p0 = min(max((self.b_hits + 1) / (self.b_n + 2), cfg.intermittent_p0_min), 0.3)
        p1 = min(max(cfg.intermittent_p1, 3 * p0), 0.9)
        ep = self.inter
        if ep is not None:
            ep.acc.add(c)
            if hit:
                self.b_last, self.b_quiet = (c.step, c.end_time), 0
            else:
                self.b_quiet += 1
                if self.b_quiet >= max(cfg.min_recovery_steps, math.ceil(4 / p1)):
                    ep.end_step, ep.end_time = self.b_last if self.b_last is not None else (c.step, c.end_time)
                    self.inter, self.B = None, 0.0
            return
        # rounded as the rank level rounds them: bernoulli_h_for_arl caches by its arguments
        h = bernoulli_h_for_arl(float(f"{p0:.2g}"), float(f"{p1:.2g}"), cfg.job_arl0)
        if self.B < 0.5 * h:  # in control as far as the test can tell: the job's own rate
            self.b_hits += hit
            self.b_n += 1
        prev = self.B
        inc = math.log(p1 / p0) if hit else math.log((1 - p1) / (1 - p0))
        self.B = max(0.0, self.B + inc)
        if self.B <= 0:
            self.b_steps.clear()
            return
        if prev <= 0:
            self.b_steps.clear()
        self.b_steps.append((inc, c))
        if self.B < h:
            return
        # the run starts at its maximum-likelihood change point: after the lowest point of its partial sums
        # (a lone slow step some tens of steps before the onset leaves the test above zero until then)
        incs = np.fromiter((v for v, _ in self.b_steps), float, len(self.b_steps))
        tau = int(np.argmin(np.concatenate([[0.0], np.cumsum(incs)])[:-1]))
        acc = _Acc()
        for _, ctx in islice(self.b_steps, tau, None):
            acc.add(ctx)
        ratio = acc.mean_t() / self.base
        slow_share = float(np.mean(incs[tau:] > 0))
        if ratio < 1 + cfg.min_effect or slow_share > _INTERMITTENT_SHARE:
            # slow steps that cost too little to matter yet, or nearly every step slow (a level shift: the
            # mean test's): stay at the interval
            self.B = h
            return
        self.inter = _Episode(start_step=acc.first_step if acc.first_step is not None else c.step,
                              start_time=acc.first_time, detected_at=c.step, acc=acc, evidence=[self._evidence(c)],
                              intermittent=True)
        self.b_last, self.b_quiet = (c.step, c.end_time), 0
        self.b_steps.clear()
        if len(self.episodes) < cfg.max_alarms:
            self.episodes.append(self.inter)
        self._alarm(SlowAlarm(
            step=c.step, time=c.end_time, scope="job", subject="job",
            message=(f"job step time {ratio:.2f}x its baseline ({self.base:.4g} s) on average since step "
                     f"{self.inter.start_step}, its slow steps recurring (intermittent)"),
            evidence=[self._evidence(c)],
        ))

    # ------------------------------------------------------------------ CUSUM
    def _renoise(self, x: float) -> None:
        """Re-estimate the noise on recent in-control steps; it only grows (a 20-step baseline window that
        happened to be quiet must not make the job's usual noise look like slowdowns)."""
        self.recent.append(x)
        self.since_noise += 1
        if self.since_noise < _NOISE_EVERY or len(self.recent) < 40:
            return
        self.since_noise = 0
        v = np.fromiter(self.recent, float)
        med = float(np.median(v))
        sig = self.cfg.mad_scale * float(np.median(np.abs(v - med)))
        rho = _lag1(v)
        if sig * float(ar1_long_run_factor(rho)) > self._lr_sigma():
            self.sigma, self.rho, self._h = max(sig, self.sigma or 0.0), rho, None

    def _feed(self, c: StepCtx) -> None:
        assert self.base is not None
        raw = math.log(c.T / self.base)
        if self.episode is None and self.S <= 0:
            self._renoise(raw)
        x = max(-self._clip(), min(self._clip(), raw))
        k, h = self.k, self.h
        if self.episode is None:
            prev = self.S
            self.S = max(0.0, self.S + x - k)
            if self.S <= 0:
                self.run = _Acc()
                self._reset_run_steps()
            else:
                if prev <= 0:
                    self.run = _Acc()
                    self._reset_run_steps()
                self.run.add(c)
                self._keep_run_step(x, c)
                ratio = self.run.mean_t() / self.base
                if self.S >= h and self.run.n >= self.cfg.min_episode_steps and ratio >= self._gate(self.run.n):
                    self._open(c, ratio)
        else:
            ep = self.episode
            ep.acc.add(c)
            prev = self.R
            self.R = max(0.0, self.R + k - x)
            if self.R > 0:
                if prev <= 0:
                    self.racc = _Acc()
                    self.end_candidate = self.last_fed
                self.racc.add(c)
                # back to baseline for long enough: an intermittent slowdown's short pauses do not end it
                if self.R >= h and self.racc.n >= self.cfg.min_recovery_steps:
                    self._close()
        self.last_fed = (c.step, c.end_time)

    def _evidence(self, c: StepCtx) -> StepEvidence:
        f = [None if not math.isfinite(v) else round(v, 6) for v in c.phases]
        return StepEvidence(step=c.step, step_time_s=round(c.T, 6), baseline_s=round(self.base or 0.0, 6),
                            compute_s=f[0], comm_s=f[1], data_s=f[2])

    def _reset_run_steps(self) -> None:
        self.run_steps.clear()
        self.run_dropped = _Acc()

    def _keep_run_step(self, x: float, c: StepCtx) -> None:
        light = StepCtx(step=c.step, T=c.T, weight=c.weight, start_time=c.start_time, end_time=c.end_time, phases=c.phases)
        self.run_steps.append((x, light))
        if len(self.run_steps) > _RUN_STEPS_KEPT:
            self.run_dropped.add(self.run_steps.popleft()[1])

    def _change_point(self) -> None:
        """Move the run's start to the maximum-likelihood change point (Hinkley 1971).

        The CUSUM's last zero starts the run as soon as the step times drift above ``k``; a mild drift
        before the real change (6 % for 25 steps, then +33 %) would date the episode, and charge its time
        lost, from the drift. For a mean shift of the log ratio ``x`` from 0 (the baseline) the change point
        is ``argmax_tau (sum_{t > tau} x_t)^2 / (n - tau)`` over the run's kept steps (the last
        ``_RUN_STEPS_KEPT``); the steps before it leave the run's sums.
        """
        xs = np.fromiter((v for v, _ in self.run_steps), float, len(self.run_steps))
        if xs.size < 2:
            return
        tail = np.cumsum(xs[::-1])[::-1]  # sum of x from each index to the end
        n_after = np.arange(xs.size, 0, -1)
        score = np.where(tail > 0, tail**2 / n_after, -np.inf)
        tau = int(np.argmax(score))
        if tau == 0:
            return
        pre = self.run_dropped  # the steps before the change point: those dropped, then the first tau kept
        for _, ctx in islice(self.run_steps, tau):
            pre.add(ctx)
        self.run.sub(pre)
        first = self.run_steps[tau][1]
        self.run.first_step, self.run.first_time = first.step, first.start_time

    def _open(self, c: StepCtx, ratio: float) -> None:
        self._change_point()
        self._reset_run_steps()
        run = self.run
        ratio = run.mean_t() / self.base if self.base else ratio  # over the steps since the change point
        ep = _Episode(start_step=run.first_step if run.first_step is not None else c.step, start_time=run.first_time,
                      detected_at=c.step, acc=run, evidence=[self._evidence(c)])
        self.episode, self.run, self.R = ep, _Acc(), 0.0
        if len(self.episodes) < self.cfg.max_alarms:
            self.episodes.append(ep)
        self._alarm(SlowAlarm(
            step=c.step, time=c.end_time, scope="job", subject="job",
            message=(f"job step time {ratio:.2f}x its baseline ({self.base:.4g} s) since step {ep.start_step}"),
            evidence=[self._evidence(c)],
        ))

    def _close(self) -> None:
        ep = self.episode
        assert ep is not None
        ep.acc.sub(self.racc)
        ep.end_step, ep.end_time = self.end_candidate
        if ep.end_step is None or ep.end_step < ep.start_step:
            ep.end_step = ep.start_step
        self.episode, self.S, self.R, self.racc = None, 0.0, 0.0, _Acc()

    def _alarm(self, a: SlowAlarm) -> None:
        if len(self.alarms) < self.cfg.max_alarms:
            self.alarms.append(a)

    # ------------------------------------------------------------------ output
    def baseline_info(self) -> BaselineInfo:
        """What was learned about the job's normal pace."""
        names = ("compute", "comm", "data")
        return BaselineInfo(
            step_time_s=round(self.base, 6) if self.base is not None else None,
            noise_sigma=round(self.sigma, 5) if self.sigma is not None else None,
            warmup_steps=self.warm, first_step=self.base_first, last_step=self.base_last, excluded_steps=self.excluded,
            periodic=[f"every {g} steps (step % {g} == {r})" for g, r in self.periodic],
            phase_medians_s={n: round(float(v), 6) for n, v in zip(names, self.phase_base, strict=True) if math.isfinite(v)},
        )

    def episode_models(self) -> list[SlowEpisode]:
        """The episodes found so far (the open one is ``ongoing``)."""
        out = []
        for ep in self.episodes:
            acc = ep.acc
            if acc.w <= 0 or self.base is None:
                continue
            mean_t = acc.mean_t()
            kind = None
            if acc.ph_n.min() > 0 or np.isfinite(self.phase_base).any():
                with np.errstate(all="ignore"):
                    grown = np.where(acc.ph_n > 0, acc.ph / np.maximum(acc.ph_n, 1), np.nan) - self.phase_base
                if np.isfinite(grown).any() and np.nanmax(grown) > 0:
                    kind = PHASES[int(np.nanargmax(grown))]
            out.append(SlowEpisode(
                start_step=ep.start_step, end_step=ep.end_step, start_time=ep.start_time, end_time=ep.end_time,
                detected_at_step=ep.detected_at, steps=acc.n, slowdown_factor=round(mean_t / self.base, 4),
                time_lost_s=round(max(0.0, acc.tw - acc.w * self.base), 6), kind=kind,
                ongoing=ep is self.episode or ep is self.inter, intermittent=ep.intermittent, evidence=ep.evidence,
            ))
        return out
