"""The streaming fail-slow detector: ``SlowDetector.update(step_records)`` and ``SlowDetector.report()``.

Records may arrive in any grouping (one call per step, per rank, or a whole file), out of order,
duplicated or with ranks missing. They are buffered per step; a step is processed, in step order,
as soon as every rank known so far (or ``world_size`` ranks, if given) has reported, or when half of the
ranks have reported a step ``max_lag_steps`` steps newer. A record for a step already processed is counted as late
and dropped; a second record for the same (step, rank) replaces the first (the highest ``attempt``
wins, so a restarted job's replayed steps supersede the failed attempt's).

Per processed step the work is O(ranks in the step) (a few numpy passes and lexsorts), and the state
is bounded: per-rank/node/stage arrays, at most ``max_lag_steps + 1`` buffered steps, one held
outlier step, and capped lists of alarms and findings. The batch entry point
(:func:`diag_service.slow.analyze.analyze_slow`) replays a whole feed through this class, so
streaming and batch give the same report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from diag_service.domain import Category, Evidence, FailureMode
from diag_service.limits import LIMITS
from diag_service.slow.feeds import MAX_RANK, FeedError, RecordConverter, StepBatch, dropped_nodes_warning
from diag_service.slow.job import JobDetector, StepCtx
from diag_service.slow.models import (
    FeedStats,
    GroupFinding,
    SlowAlarm,
    SlowConfig,
    SlowEpisode,
    SlowReport,
    StepEvidence,
    Straggler,
    StragglerKind,
)
from diag_service.slow.rank import (
    KINDS,
    Grouping,
    PeerTracker,
    PhaseEvidence,
    UnitRecord,
    max_of_others,
    median,
    nanmedian,
    peer_reference,
    phase_evidence,
)

#: The category of a straggler by the phase it lags in. One rank's data loading slower than its peers' is that rank's
#: own data or loader (its shard heavier, its files re-exported in a slower format, its loader workers starved), not
#: storage: a shared volume slows every rank's reads (a job-wide data phase, :meth:`SlowDetector._category`). Of the
#: zoo's dev runs with one rank's data phase slow (2026-12-06), 5 were its data, 2 its loader's CPU, none storage.
_KIND_CATEGORY = {
    StragglerKind.COMPUTE: Category.GPU_HARDWARE,
    StragglerKind.COMMUNICATION: Category.NETWORK,
    StragglerKind.DATA: Category.DATA,
}


#: A job-wide compute slowdown with no rank standing out, in a feed without ``comm_wait_s``: what a straggler looks like
#: when the feed times "compute" around ``backward()``, where DDP's gradient all-reduce waits for the slowest rank.
HIDDEN_STRAGGLER_HINT = (
    "every rank's compute time rose alike and no rank stands out; if compute is timed around backward() (DDP's gradient "
    "all-reduce runs inside it), one slow rank makes every rank slow: time the work before backward apart from "
    "backward and its all-reduce, or record comm_wait_s, to locate it (docs/slow.md, record format)")


#: The same for a job-wide communication slowdown: a slow link, or one rank late to every collective (stopped,
#: throttled, busy between its forward and its backward) that every other rank waits for inside it (e.g.
#: a SIGSTOPped rank, which would read "network"); the category is left unknown.
HIDDEN_LATE_RANK_HINT = (
    "every rank's communication time rose alike and no rank stands out: a slow link, or one rank late to each "
    "collective that the others wait for inside it; record comm_wait_s (or time each rank's work before its "
    "collectives) to tell them apart (docs/slow.md, record format)")


def _r(v: float) -> float | None:
    return round(float(v), 6) if math.isfinite(v) else None


class SlowDetector:
    """Online fail-slow detector over per-rank step records (see the module docstring).

    ``config``: detector parameters; ``world_size``: the number of ranks, if known (otherwise learned
    from the ranks seen); ``source``/``fmt``/``units``: recorded in the report's input section.
    """

    def __init__(
        self,
        config: SlowConfig | None = None,
        *,
        world_size: int | None = None,
        source: str = "stream",
        fmt: str = "stream",
        units: str = "seconds",
    ) -> None:
        self.cfg = config or SlowConfig()
        if world_size is not None and not 1 <= world_size <= LIMITS.max_world_size:
            raise FeedError(f"world size {world_size} is outside 1..{LIMITS.max_world_size}")
        self.world_size = world_size
        self.units = units
        self.conv = RecordConverter()
        self.stats = FeedStats(source=source, format=fmt)
        self.pending: dict[int, list[StepBatch]] = {}
        self.max_seen = -1
        self.last_done = -1
        # known ranks, sorted, and the unit (row of the per-rank tables) of each: memory per rank seen,
        # not per rank id (a sparse id such as 1,000,000 costs one entry)
        self.rank_keys = np.zeros(0, np.int64)
        self.rank_units = np.zeros(0, np.int64)
        self.unit_rank = np.zeros(0, np.int64)
        self.unit_node = np.zeros(0, np.int32)
        self.unit_stage = np.zeros(0, np.int32)
        #: per unit, the step and end time of its last record: the time a rank spends between its records (the
        #: previous record's end to this one's start) is host work outside every phase (_outside_compute_late)
        self.unit_last_step = np.zeros(0, np.int64)
        self.unit_last_end = np.zeros(0, np.float64)
        self.n_units = 0
        self.job = JobDetector(self.cfg)
        self.ranks = PeerTracker(self.cfg)
        self.nodes = PeerTracker(self.cfg)
        self.stages = PeerTracker(self.cfg)
        self.alarms: list[SlowAlarm] = []
        self._new: list[SlowAlarm] = []
        self._steps = 0
        self._first_step: int | None = None
        self._phases: set[str] = set()
        self._no_phase_steps = 0
        self._partial_trace_steps = 0
        self._job_only_steps = 0
        self._started = time.perf_counter()
        self._remap_key: list[str] | None = None
        self._remap_names: list[str] = []
        self._remap = np.zeros(0, np.int32)

    # ------------------------------------------------------------------ input
    def update(self, step_records: StepBatch | Iterable[Mapping[str, Any] | Any]) -> list[SlowAlarm]:
        """Add records (a :class:`StepBatch`, or mappings / pydantic objects in the lab's format).

        Returns the alarms raised by the steps this call completed. Invalid records are skipped and
        counted (``input.bad_records``); nothing raises on bad data.
        """
        if isinstance(step_records, StepBatch):
            batch = self._own_nodes(step_records)
        else:
            bad0 = self.conv.bad
            batch = self.conv.convert(step_records)
            self.stats.bad_records += self.conv.bad - bad0
        return self._ingest(batch)

    def _own_nodes(self, b: StepBatch) -> StepBatch:
        if b.node_names is self.conv.node_names or not b.node_names:
            return b
        if b.node_names is self._remap_key or b.node_names == self._remap_names:
            remap = self._remap
        else:
            remap = np.array([self.conv.node_code(n) for n in b.node_names], dtype=np.int32)
            self._remap_key, self._remap_names, self._remap = b.node_names, list(b.node_names), remap
        node = np.where(b.node >= 0, remap[np.clip(b.node, 0, None)], -1).astype(np.int32)
        return StepBatch(**{**b.__dict__, "node": node, "node_names": self.conv.node_names})

    def _ingest(self, b: StepBatch, final: bool = False) -> list[SlowAlarm]:
        self._new = []
        n = len(b)
        if n:
            self.stats.records += n
            steps = b.step
            prev_max = np.maximum.accumulate(np.concatenate([[self.max_seen], steps[:-1]]))
            self.stats.out_of_order += int((steps < prev_max).sum())
            late = steps <= self.last_done
            if late.any():
                self.stats.late += int(late.sum())
                b = b.take(~late)
                steps = b.step
            if len(b):
                self._register_ranks(b.rank)
                order = np.argsort(steps, kind="stable")
                ss = steps[order]
                cut = np.flatnonzero(np.diff(ss)) + 1
                for lo, hi in zip(np.concatenate([[0], cut]), np.concatenate([cut, [ss.size]]), strict=True):
                    s = int(ss[lo])
                    self.pending.setdefault(s, []).append(b.take(order[lo:hi]))
                self.max_seen = max(self.max_seen, int(ss[-1]))
        self._drain(final)
        return self._new

    def _register_ranks(self, ranks: np.ndarray) -> None:
        r = ranks[ranks >= 0]
        if r.size == 0:
            return
        top = int(r.max())
        if top > MAX_RANK:  # feeds reject such records; a StepBatch built by hand is refused too
            raise FeedError(f"rank {top} is above the largest supported rank {MAX_RANK}")
        unknown = self._units_of(r) < 0
        new = np.unique(r[unknown]) if unknown.any() else r[:0]
        if new.size:
            k = new.size
            keys = np.concatenate([self.rank_keys, new])
            units = np.concatenate([self.rank_units, np.arange(self.n_units, self.n_units + k)])
            order = np.argsort(keys, kind="stable")
            self.rank_keys, self.rank_units = keys[order], units[order]
            need = self.n_units + k
            if need > self.unit_rank.size:
                cap = max(need, 2 * self.unit_rank.size)
                for name, fill, dt in (("unit_rank", 0, np.int64), ("unit_node", -1, np.int32), ("unit_stage", -1, np.int32),
                                       ("unit_last_step", -2, np.int64), ("unit_last_end", np.nan, np.float64)):
                    a = getattr(self, name)
                    g = np.full(cap, fill, dt)
                    g[: a.size] = a
                    setattr(self, name, g)
            self.unit_rank[self.n_units: need] = new
            self.n_units = need

    def _units_of(self, ranks: np.ndarray) -> np.ndarray:
        """The unit index of each rank in ``ranks`` (int64 array of ranks >= 0); -1 for a rank not seen yet."""
        if self.rank_keys.size == 0:
            return np.full(ranks.size, -1, np.int64)
        pos = np.minimum(np.searchsorted(self.rank_keys, ranks), self.rank_keys.size - 1)
        return np.where(self.rank_keys[pos] == ranks, self.rank_units[pos], -1)

    def _moved_on(self, world: int) -> int:
        """The newest step that at least half of the ranks (or a job-level record) have reached.

        The lag rule counts from it, not from the newest record, so that one stray record far in the
        future (a clock or step-counter glitch) does not force every pending step through incomplete.
        """
        need = max(1, world // 2)
        best = self.last_done
        for st, parts in self.pending.items():
            if st > best and sum(len(p) for p in parts) >= need:
                best = st
        return best

    def _ready(self, s: int, final: bool) -> bool:
        if final or len(self.pending) > LIMITS.max_pending_steps:
            return True  # the end of the input, or too many steps waiting: the oldest goes through as it is
        world = self.world_size or self.n_units
        if world <= 0:
            return False
        if s <= self._moved_on(world) - self.cfg.max_lag_steps - 1:
            return True
        parts = self.pending[s]
        ranks = np.concatenate([p.rank for p in parts]) if len(parts) > 1 else parts[0].rank
        if (ranks < 0).any():
            return True  # a job-level series (log lines): one record is the whole step
        if ranks.size < world:
            return False
        return int(np.count_nonzero(np.bincount(self._units_of(ranks), minlength=self.n_units))) >= world

    def _drain(self, final: bool) -> None:
        while self.pending:
            s = min(self.pending)
            if not self._ready(s, final):
                break
            self._process(s, StepBatch.concat(self.pending.pop(s)))
            self.last_done = s
        if final:
            for c, inc in self.job.flush():
                if inc or c.ranks_compared:
                    self._rank_step(c)
        self._collect_job_alarms()

    # ------------------------------------------------------------------ one step
    def _process(self, step: int, b: StepBatch) -> None:
        self._steps += 1
        if self._first_step is None:
            self._first_step = step
        rk = b.rank
        if rk.size > 1:
            key = np.where(rk >= 0, rk, -1)
            order = np.lexsort((np.arange(rk.size), b.attempt, key))
            ks = key[order]
            last = np.ones(ks.size, bool)
            last[:-1] = ks[1:] != ks[:-1]
            keep = order[last]
            if keep.size < rk.size:
                self.stats.duplicates += int(rk.size - keep.size)
                b = b.take(np.sort(keep))
        for name, a in (("compute", b.compute), ("comm", b.comm), ("data", b.data), ("comm_wait", b.comm_wait)):
            if name not in self._phases and np.isfinite(a).any():
                self._phases.add(name)
        ranked = b.rank >= 0
        rb = b.take(ranked) if not ranked.all() else b
        idx = self._units_of(rb.rank) if len(rb) else np.zeros(0, np.int64)
        if len(rb):
            known = rb.node >= 0
            self.unit_node[idx[known]] = rb.node[known]
            ks = rb.stage >= 0
            self.unit_stage[idx[ks]] = rb.stage[ks]
            world = self.world_size or self.n_units
            if idx.size < world:
                self.stats.incomplete_steps += 1
        with np.errstate(all="ignore"):
            dur = rb.end - rb.start
            # the time since the rank's record of the step before ended (consecutive steps only): work between steps
            gap = np.full(len(rb), np.nan)
            if len(rb):
                prev_ok = self.unit_last_step[idx] == step - 1
                gap = np.where(prev_ok, rb.start - self.unit_last_end[idx], np.nan)
                self.unit_last_step[idx] = step
                self.unit_last_end[idx] = rb.end
                if np.isfinite(rb.start).sum() >= 2:
                    # own work only as far as the rank also starts the step late: a rank that idles between steps
                    # waiting for a synchronisation outside the timed record (every rank then starts together) is
                    # a victim, not a culprit
                    gap = np.minimum(gap, rb.start - np.nanmin(rb.start))
                else:
                    gap = np.full(len(rb), np.nan)
            have_ph = np.isfinite(rb.compute) | np.isfinite(rb.comm) | np.isfinite(rb.data)
            busy = np.where(have_ph, np.nan_to_num(rb.compute) + np.nan_to_num(rb.comm) + np.nan_to_num(rb.data), np.nan)
            T = math.nan
            for cand in (dur, rb.step_time, busy, b.step_time):
                if np.isfinite(cand).any():
                    T = nanmedian(cand)
                    break
            src = rb if len(rb) else b
            phases = tuple(nanmedian(a) if np.isfinite(a).any() else math.nan
                           for a in (src.compute, src.comm, src.data))
            t0 = float(np.nanmin(b.start)) if np.isfinite(b.start).any() else None
            t1 = float(np.nanmax(b.end)) if np.isfinite(b.end).any() else None
        t_max = float(np.nanmax(dur)) if np.isfinite(dur).sum() >= 2 else math.nan
        w_step = median(b.weight) if len(b) else 1.0
        if t0 is None and t1 is not None and math.isfinite(T):  # a log line's stamp ends the steps it covers
            t0 = t1 - T * w_step
        ctx = StepCtx(step=step, T=T, T_max=t_max, weight=w_step, kind=int(b.kind.max()),
                      start_time=t0, end_time=t1, phases=phases,  # type: ignore[arg-type]
                      payload=(rb, idx, dur, busy, gap) if len(rb) >= 2 else None)
        if not len(rb):
            self._job_only_steps += 1
        for c, included in self.job.push(ctx):
            # A lone or periodic unmarked slow step is kept out of the job baseline and CUSUM (an evaluation or
            # checkpoint step as far as the job can tell), but the ranks are still compared on it: a
            # straggler's intermittent slow steps are exactly such steps, and one step's rank evidence is
            # clipped (rank_clip), so it cannot alarm alone. Marked eval/checkpoint steps stay out of both.
            if included or c.ranks_compared:
                self._rank_step(c)
        self._collect_job_alarms()

    def _collect_job_alarms(self) -> None:
        while self.job.alarms:
            self._alarm(self.job.alarms.pop(0))

    def _alarm(self, a: SlowAlarm) -> None:
        self._new.append(a)
        if len(self.alarms) < self.cfg.max_alarms:
            self.alarms.append(a)

    def _node_name(self, code: int) -> str | None:
        return self.conv.node_names[code] if 0 <= code < len(self.conv.node_names) else None

    def _rank_step(self, c: StepCtx) -> None:
        if c.payload is None:
            return
        rb, idx, dur, busy, gap = c.payload
        T, cfg = c.T, self.cfg
        x = {0: rb.compute, 1: rb.comm, 2: rb.data}
        if not np.isfinite(busy).any():  # no phase breakdown: the step duration stands for compute
            self._no_phase_steps += 1
            x = {0: dur, 1: np.full(dur.size, np.nan), 2: np.full(dur.size, np.nan)}
            busy = dur
        g, ng = None, 0
        if (rb.stage >= 0).any():
            g = np.where(rb.stage >= 0, rb.stage, rb.stage.max() + 1).astype(np.int64)
            ng = int(g.max()) + 1
        wait = rb.comm_wait
        has_comm = np.isfinite(x[1])
        has_wait = np.isfinite(wait) & has_comm
        # a step is compared on the ranks' own communication only when every rank's trace is there: a rank
        # without one would keep its wait and look like the culprit
        traced = bool(has_comm.any() and has_wait.sum() == has_comm.sum())
        if has_wait.any() and not traced:
            self._partial_trace_steps += 1
        if traced:
            # A collective trace splits each rank's communication into waiting for the last peer and its own
            # part: a victim's wait drops out, and a rank whose own sends are late (its peers wait for it while
            # its compute is normal) shows up as an excess of its own part.
            w = np.where(np.isfinite(wait), np.minimum(wait, x[1]), 0.0)
            x = {0: x[0], 1: x[1] - w, 2: x[2]}
            busy = np.where(np.isfinite(busy), busy - np.nan_to_num(w), busy)
        ev: dict[int, PhaseEvidence] = {}
        late = None
        if np.isfinite(x[1]).any() and not traced:
            cd = np.nan_to_num(x[0]) + np.nan_to_num(x[2])
            cref, csig = peer_reference(cd, g, ng, cfg.mad_scale)
            late = max_of_others(cd - cref - cfg.peer_k * csig)  # a peer genuinely late, beyond the noise
        waited = None
        if not traced and np.isfinite(x[0]).any():
            waited = self._outside_compute_late(rb, dur, busy, x, g, ng, gap)
        for j in (0, 1, 2):
            if np.isfinite(x[j]).any():
                ev[j] = phase_evidence(x[j], busy if j == 1 else None, g, ng, T, cfg,
                                       late if j == 1 else waited if j == 0 else None)
        cost = None
        if self.job.base_max is not None and c.T_max > 0:
            # synchronous ranks pay for the slowest one: its step must be longer than the slowest usually is
            cost = max(0.0, 1.0 - self.job.base_max / c.T_max)
        # The cap matters only where the reference is the one other unit: of two processes sharing a loaded
        # host, either may get less CPU for tens of steps while the step is no longer (one took CPU from the
        # other). With three or more peers the median does not move with the candidate, and the cap (from a
        # noisy maximum over ranks) would only hide real stragglers.
        rank_cost = cost if self._smallest_peer_group(rb, g) < 3 else None

        def rank_ev(pos: int, j: int) -> StepEvidence:
            e = ev[j]
            ref = float(e.ref[pos])
            return StepEvidence(
                step=c.step, rank=int(rb.rank[pos]), node=self._node_name(int(rb.node[pos])), step_time_s=_r(T),
                compute_s=_r(x[0][pos]), comm_s=_r(x[1][pos]), data_s=_r(x[2][pos]),
                comm_wait_s=_r(float(wait[pos])) if traced else None,
                **{("peer_compute_s", "peer_comm_s", "peer_data_s")[j]: _r(ref)},
            )

        for rec in self.ranks.update(c.step, idx, ev, rank_ev, rank_cost):
            r = int(self.unit_rank[rec.unit])
            node = self._node_name(int(self.unit_node[rec.unit]))
            e = rec.evidence[0]
            val = (e.compute_s, e.comm_s, e.data_s)[KINDS.index(rec.kind)]
            ref = (e.peer_compute_s, e.peer_comm_s, e.peer_data_s)[KINDS.index(rec.kind)]
            self._alarm(SlowAlarm(
                step=c.step, time=c.end_time, scope="rank", subject=str(r), kind=rec.kind,
                message=f"rank {r}{f' ({node})' if node else ''} is a {rec.kind} straggler since step {rec.first_step}: "
                        f"{val} s vs peers' {ref} s",
                evidence=list(rec.evidence),
            ))
        self._group_step(c, rb, x, busy, T, cost, rb.node, self.nodes, "node", lambda code: self._node_name(code) or str(code),
                         pair_low=True, traced=traced)
        if g is not None:
            self._group_step(c, rb, x, busy, T, cost, rb.stage, self.stages, "stage", str, traced=traced)

    def _outside_compute_late(self, rb: StepBatch, dur: np.ndarray, busy: np.ndarray, x: dict[int, np.ndarray],
                              g: np.ndarray | None, ng: int, gap: np.ndarray | None = None) -> np.ndarray:
        """Per rank, the largest excess (seconds) among the *other* ranks of the time they spent outside compute.

        That time is the data phase plus what no phase covers (the record's ``end - start`` minus its phases, or
        its ``step_time`` minus them: logging, metrics, host-side work the feed does not measure), each beyond
        the peers' reference by ``peer_k`` robust sigmas. DistributedDataParallel runs its all-reduce inside
        backward, so a feed without a collective trace puts a rank's wait for a peer that is late *outside*
        compute into its own compute time: that compute excess is the peer's delay, not the rank's (e.g. the
        rank waiting on rank 0's per-step metrics would be named a 4.85x compute straggler). ``gap``: per
        rank, the seconds from its previous step's record's end to this one's start, at most as late as it starts the
        step after the earliest rank (NaN unknown): work between its timed steps that its peers wait for inside theirs
        (e.g. rank 0's gc.collect() after each step, which would name rank 1 a 10x compute straggler). A rank that idles
        between steps but starts with its peers waited for a synchronisation outside the record: no excuse for them.
        """
        wall = np.where(np.isfinite(dur), dur, rb.step_time)
        other = np.where(np.isfinite(wall) & np.isfinite(busy), np.maximum(wall - busy, 0.0), 0.0)
        if gap is not None:
            other = other + np.where(np.isfinite(gap), np.maximum(gap, 0.0), 0.0)
        od = np.nan_to_num(x[2]) + other
        oref, osig = peer_reference(od, g, ng, self.cfg.mad_scale)
        return max_of_others(od - oref - self.cfg.peer_k * osig)

    @staticmethod
    def _smallest_peer_group(rb: StepBatch, g: np.ndarray | None) -> int:
        """Ranks in the smallest peer group of this step (all ranks when there are no stages)."""
        if g is None:
            return len(rb)
        counts = np.bincount(g)
        return int(counts[counts > 0].min()) if counts.size else 0

    def _group_step(self, c: StepCtx, rb: StepBatch, x: dict[int, np.ndarray], busy: np.ndarray, T: float,
                    cost: float | None, codes: np.ndarray, tracker: PeerTracker, scope: str, name: Any,
                    min_ranks: int = 2, traced: bool = False, pair_low: bool = False) -> None:
        """Peer comparison of groups (nodes or stages) by their ranks' medians.

        Only groups with at least ``min_ranks`` ranks in the step take part. ``pair_low`` (nodes): a group
        with two values in a phase takes the smaller of them instead of their median: the median of two
        ranks is their mean, so one straggler among two would make its node look slow, while the smaller
        one is slow only when both ranks are (the node's machine, not one process). ``traced``: ``x[1]``
        is already the ranks' own communication (a collective trace took their wait out), so no late-peer
        correction.
        """
        ok = codes >= 0
        if not ok.any():
            return
        cc = codes.astype(np.int64)
        ng = int(cc.max()) + 1
        counts = np.bincount(cc[ok], minlength=ng)
        multi = np.flatnonzero(counts >= min_ranks)
        if multi.size < 2:
            return
        grp = Grouping(np.where(ok, cc, -1), ng)
        gcode = np.where(ok, cc, 0)

        def stat(v: np.ndarray) -> np.ndarray:
            m, cnt = grp.medians(v)
            if pair_low and (cnt == 2).any():
                low = np.full(ng, np.inf)
                fin = ok & np.isfinite(v)
                np.minimum.at(low, gcode[fin], v[fin])
                m = np.where(cnt == 2, low, m)
            return m[multi]

        meds = {}
        for j in (0, 1, 2):
            if np.isfinite(x[j]).any():
                meds[j] = stat(x[j])
        bmed = stat(busy)
        late = None
        if 1 in meds and not traced:
            cd = np.nan_to_num(meds.get(0, np.zeros(multi.size))) + np.nan_to_num(meds.get(2, np.zeros(multi.size)))
            cref, csig = peer_reference(cd, None, 0, self.cfg.mad_scale)
            late = max_of_others(cd - cref - self.cfg.peer_k * csig)
        ev = {j: phase_evidence(v, bmed if j == 1 else None, None, 0, T, self.cfg, late if j == 1 else None)
              for j, v in meds.items()}

        def grp_ev(pos: int, j: int) -> StepEvidence:
            vals = [_r(meds[k][pos]) if k in meds else None for k in (0, 1, 2)]
            return StepEvidence(step=c.step, node=str(name(int(multi[pos]))) if scope == "node" else None,
                                step_time_s=_r(T), compute_s=vals[0], comm_s=vals[1], data_s=vals[2],
                                **{("peer_compute_s", "peer_comm_s", "peer_data_s")[j]: _r(float(ev[j].ref[pos]))})

        for rec in tracker.update(c.step, multi, ev, grp_ev, cost):
            label = str(name(rec.unit))
            self._alarm(SlowAlarm(
                step=c.step, time=c.end_time, scope=scope, subject=label, kind=rec.kind,
                message=f"{scope} {label}: its ranks' median {rec.kind} time is above the other {scope}s' since step "
                        f"{rec.first_step}",
                evidence=list(rec.evidence),
            ))

    # ------------------------------------------------------------------ output
    def report(self) -> SlowReport:
        """Finish the steps still buffered (treating them as complete) and build the :class:`SlowReport`.

        Records that arrive later for those steps are counted as late. Safe to call more than once.
        """
        self._ingest(StepBatch.empty(), final=True)
        t_report = time.perf_counter()
        episodes = self.job.episode_models()
        stragglers = not_everyone(material_stragglers([self._straggler(r) for r in self.ranks.snapshot()], episodes),
                                  int(self.n_units))
        stragglers.sort(key=lambda s: (-s.time_lost_s, s.rank))
        groups = self._groups(stragglers)
        explain_episodes(episodes, stragglers)
        st = self.stats
        st.ranks = int(self.n_units)
        st.nodes = len(self.conv.node_names)
        st.steps = self._steps
        st.first_step = self._first_step
        st.last_step = self.last_done if self.last_done >= 0 else None
        st.phases = sorted(self._phases)
        warnings = list(st.warnings)
        if self._no_phase_steps:
            warnings.append(f"{self._no_phase_steps} step(s) had no phase breakdown; rank kinds assume compute")
        if self._partial_trace_steps:
            warnings.append(
                f"{self._partial_trace_steps} step(s) had comm_wait_s for only some ranks; those steps compare the ranks' "
                "whole communication time, so a rank that is late to its collectives cannot be named there"
            )
        if st.bad_records and not any("invalid" in w or "not valid JSON" in w for w in warnings):
            # records given to update() directly (a stream): the loader's warning was never written
            why = "; ".join(self.conv.reasons[:3])
            warnings.append(f"{st.bad_records} record(s) were invalid and skipped" + (f", e.g. {why}" if why else ""))
        if self.conv.dropped_nodes and not any("unknown node" in w for w in warnings):
            warnings.append(dropped_nodes_warning(self.conv.dropped_nodes))
        if st.late:
            warnings.append(f"{st.late} record(s) arrived after their step was processed and were dropped")
        if st.duplicates:
            warnings.append(f"{st.duplicates} duplicate record(s) for a (step, rank); the last (highest attempt) was kept")
        if st.incomplete_steps:
            warnings.append(f"{st.incomplete_steps} step(s) were missing some ranks")
        if self.world_size and self.n_units > self.world_size:
            warnings.append(f"{int(self.n_units)} ranks seen, more than the given world size {self.world_size}: "
                            "the world size is too small, or the feed mixes jobs")
        if self.job.base is None and self._steps:
            warnings.append(
                f"only {self._steps} step record(s): not enough to learn a baseline "
                f"({self.cfg.warmup_steps} warm-up + {self.cfg.baseline_steps} baseline steps needed); no job-level verdict")
        untraced = not stragglers and not groups and self.n_units >= 2 and "comm_wait" not in self._phases
        if episodes and untraced and any(e.kind is StragglerKind.COMPUTE for e in episodes):
            warnings.append(HIDDEN_STRAGGLER_HINT)
        if episodes and untraced and any(e.kind is StragglerKind.COMMUNICATION for e in episodes):
            warnings.append(HIDDEN_LATE_RANK_HINT)
        st.warnings = list(dict.fromkeys(warnings))
        found = bool(episodes or stragglers or groups)
        rep = SlowReport(
            failure_mode=FailureMode.FAIL_SLOW if found else None,
            category=self._category(episodes, stragglers, groups, untraced=untraced),
            summary=self._summary(episodes, stragglers, groups),
            units=self.units, job_slowdown=episodes, stragglers=stragglers, groups=groups,
            time_lost_s=round(sum(e.time_lost_s for e in episodes), 6),
            baseline=self.job.baseline_info(), alarms=list(self.alarms), input=st.model_copy(deep=True),
            config=self.cfg,
            timings_ms={"detect": round((t_report - self._started) * 1000, 3),
                        "report": round((time.perf_counter() - t_report) * 1000, 3)},
        )
        return rep

    def _straggler(self, rec: UnitRecord) -> Straggler:
        u = rec.unit
        frac = rec.nslow / rec.n if rec.n else 0.0
        stage = int(self.unit_stage[u])
        return Straggler(
            rank=int(self.unit_rank[u]), node=self._node_name(int(self.unit_node[u])), stage=stage if stage >= 0 else None,
            kind=rec.kind, slowdown_factor=PeerTracker.factor(rec), first_step=rec.first_step,
            last_step=max(rec.last_slow, rec.first_step), detected_at_step=rec.detected_at,
            present_at_start=rec.present_at_start, confidence=self.ranks.confidence(rec), intermittent=frac < 0.7,
            slow_fraction=round(frac, 3),
            time_lost_s=round(rec.exc, 6), active=rec.active, evidence=rec.evidence,
        )

    def _groups(self, stragglers: list[Straggler]) -> list[GroupFinding]:
        out: list[GroupFinding] = []
        members: dict[str, list[int]] = {}
        for u in range(self.n_units):
            nm = self._node_name(int(self.unit_node[u]))
            if nm is not None:
                members.setdefault(nm, []).append(int(self.unit_rank[u]))
        for tracker, scope in ((self.nodes, "node"), (self.stages, "stage")):
            for rec in tracker.snapshot():
                if scope == "node":
                    label = self._node_name(rec.unit) or str(rec.unit)
                    grp = members.get(label, [])
                else:
                    label = str(rec.unit)
                    grp = [int(self.unit_rank[u]) for u in range(self.n_units) if int(self.unit_stage[u]) == rec.unit]
                flagged = sorted({s.rank for s in stragglers if s.rank in set(grp) and s.kind == rec.kind})
                out.append(GroupFinding(
                    group=scope, name=label, kind=rec.kind, ranks=flagged[:64], n_ranks=len(grp),
                    slowdown_factor=PeerTracker.factor(rec), first_step=rec.first_step, detected_at_step=rec.detected_at,
                    confidence=tracker.confidence(rec), basis="group_median",
                ))
        seen = {(g.group, g.name, g.kind) for g in out}
        for node, ranks in members.items():
            if len(ranks) < 2 or len(members) < 2:
                continue
            for kind in KINDS:
                hit = [s for s in stragglers if s.node == node and s.kind == kind]
                if len(hit) == len(ranks) and ("node", node, kind) not in seen:
                    out.append(GroupFinding(
                        group="node", name=node, kind=kind, ranks=sorted(s.rank for s in hit)[:64], n_ranks=len(ranks),
                        slowdown_factor=round(float(np.exp(np.mean(np.log([s.slowdown_factor for s in hit])))), 4),
                        first_step=min(s.first_step for s in hit), detected_at_step=max(s.detected_at_step for s in hit),
                        confidence=round(min(s.confidence for s in hit), 3), basis="all_ranks",
                    ))
        return out

    @staticmethod
    def _category(episodes: list[SlowEpisode], stragglers: list[Straggler], groups: list[GroupFinding],
                  untraced: bool = False) -> Category:
        stage = [g for g in groups if g.group == "stage"]
        if stage and not [g for g in groups if g.group == "node"]:
            return Category.CONFIG  # stage partitioning imbalance: the job's configuration
        lead = groups[0].kind if groups else (stragglers[0].kind if stragglers else None)
        if not groups and stragglers and len({s.kind for s in stragglers if s.rank == stragglers[0].rank}) >= 2:
            # the lead rank lags in two phases or more (its data loading and its compute): what it shares across
            # phases is its host (a CPU quota or a co-tenant stalls whatever phase the rank is in), not its data or
            # its device (a new user's trial 29, r13: a 0.3-CPU quota on node1 read "data straggler")
            return Category.INFRASTRUCTURE
        if lead is not None:
            if lead is StragglerKind.COMPUTE and groups and groups[0].group == "node":
                return Category.GPU_HARDWARE
            return _KIND_CATEGORY[lead]
        if episodes:
            if episodes[0].growth:
                return Category.USER_CODE  # work per step growing with the step count (diag_service.slow.offline)
            # the phase of the episode that cost the most (a run's noise episodes come first and cost little)
            kinds = [e.kind for e in sorted(episodes, key=lambda e: -e.time_lost_s) if e.kind is not None]
            if kinds and kinds[0] is StragglerKind.COMMUNICATION:
                # without a collective trace a late rank slows every rank's communication alike (HIDDEN_LATE_RANK_HINT)
                return Category.UNKNOWN if untraced else Category.NETWORK
            if kinds and kinds[0] is StragglerKind.DATA:
                return Category.STORAGE
            return Category.INFRASTRUCTURE
        return Category.UNKNOWN

    def _summary(self, episodes: list[SlowEpisode], stragglers: list[Straggler], groups: list[GroupFinding]) -> str:
        u = "s" if self.units == "seconds" else " (normalised units)"
        parts: list[str] = []
        base = self.job.base
        # the costliest episodes first (in time order, three noise episodes of 0.05 s each could lead the report and
        # leave out the two that cost 13 s)
        shown_eps = sorted(episodes, key=lambda e: -e.time_lost_s)[:3]
        for ep in shown_eps:
            since = f"from step {ep.start_step}" + (f" to step {ep.end_step}" if ep.end_step is not None
                                                    else " (still slow at the last step read)")
            why = f", {ep.kind} phase" if ep.kind else ""
            how = " on average, its slow steps recurring among normal ones (intermittent)," if ep.intermittent else ""
            parts.append(f"The job ran {ep.slowdown_factor:.2f}x slower than its baseline ({base:.4g}{u}/step){how} {since}, "
                         f"detected at step {ep.detected_at_step}, costing {ep.time_lost_s:.4g}{u}{why}.")
        if len(episodes) > len(shown_eps):
            rest = [e for e in episodes if e not in shown_eps]
            parts.append(f"{len(rest)} smaller episode(s) cost {sum(e.time_lost_s for e in rest):.4g}{u} more.")
        for g in groups[:3]:
            parts.append(f"{g.group.capitalize()} {g.name} is slow ({g.kind}, {g.slowdown_factor:.2f}x the other {g.group}s' "
                         f"median since step {g.first_step}; {g.n_ranks} ranks, {len(g.ranks)} of them flagged on their own).")
        shown = stragglers[:5]
        told: list[str] = []
        for s in shown:
            where = f" on {s.node}" if s.node else ""
            how = "intermittent" if s.intermittent else "persistent"
            article = "an" if how[0] in "aeiou" else "a"
            told.append(f"Rank {s.rank}{where} is {article} {how} {s.kind} straggler ({s.slowdown_factor:.2f}x its peers' "
                        f"{s.kind} time on its slow steps) since step {s.first_step}, detected at step "
                        f"{s.detected_at_step}, costing {s.time_lost_s:.4g}{u} (the time its peers waited).")
        if len(stragglers) > len(shown):
            told.append(f"{len(stragglers) - len(shown)} more straggler(s).")
        # a straggler that cost more than every episode together leads (one slow from the first step is in the
        # baseline: the job's episodes against it are its noise, not its cost)
        if stragglers and stragglers[0].time_lost_s > sum(e.time_lost_s for e in episodes):
            parts = told + parts
        else:
            parts += told
        if not parts:
            if base is None:
                return "Not enough steps to judge the job's pace; no straggler found."
            return f"No slowdown: the job kept its baseline pace ({base:.4g}{u}/step) and no rank lagged its peers."
        return " ".join(parts)


#: A rank is named a straggler beside a job-level slowdown only when its own excess cost at least this share of the
#: costliest episode's lost time: a rank's few milliseconds of data time on its slow steps (7.9x of 3 ms) do not
#: explain a job whose compute tripled on every rank (without this share, such a job and a clean control both read
#: "Rank 0 is an intermittent data straggler", category storage).
STRAGGLER_MIN_SHARE = 0.1


def material_stragglers(stragglers: list[Straggler], episodes: list[SlowEpisode]) -> list[Straggler]:
    """``stragglers`` less those whose ``time_lost_s`` is below :data:`STRAGGLER_MIN_SHARE` of the costliest of
    ``episodes`` (all of them without an episode)."""
    worst = max((e.time_lost_s for e in episodes), default=0.0)
    return [s for s in stragglers if s.time_lost_s >= STRAGGLER_MIN_SHARE * worst]


#: When every rank is flagged with one kind, the ranks whose excess is within this factor of the costliest one's are
#: the job's own phase growing, not stragglers (:func:`not_everyone`).
EVERYONE_SPREAD = 3.0


def not_everyone(stragglers: list[Straggler], ranks: int) -> list[Straggler]:
    """``stragglers`` where every one of the job's ``ranks`` (at least two) is flagged with one kind reduced to those of
    that kind whose excess (``time_lost_s``) is more than :data:`EVERYONE_SPREAD` times below the costliest one's
    dropped, and all of them dropped when none stands out so: a rank is a straggler against its peers, and when all of
    them are alike, the phase grew job-wide. E.g. a job re-pinned to fewer cores: "Rank 0
    ... an intermittent data straggler (5.53x)" and "Rank 1 ... (5.38x)" (1.1 s and 0.8 s lost: both dropped); rank 1's
    object-store throttling (35 s) beside rank 0's two slow reads (0.5 s): rank 1 kept alone."""
    if ranks < 2:
        return stragglers
    out = stragglers
    for kind in {s.kind for s in stragglers}:
        mine = [s for s in out if s.kind == kind]
        if len({s.rank for s in mine}) < ranks:
            continue
        worst = max(s.time_lost_s for s in mine)
        lead = [s for s in mine if s.time_lost_s * EVERYONE_SPREAD >= worst]
        keep = set(map(id, lead)) if len(lead) < len(mine) else set()
        out = [s for s in out if s.kind != kind or id(s) in keep]
    return out


def explain_episodes(episodes: list[SlowEpisode], stragglers: list[Straggler]) -> None:
    """Each episode's ``explained_by_ranks`` (the stragglers active during it, at most 64) and, when there are
    any, its ``kind`` (theirs, the most common); in place."""
    for ep in episodes:
        hi = ep.end_step if ep.end_step is not None else math.inf
        expl = [s for s in stragglers if s.first_step <= hi and s.last_step >= ep.start_step]
        ep.explained_by_ranks = sorted({s.rank for s in expl})[:64]
        if expl:
            kinds = [s.kind for s in expl]
            ep.kind = max(set(kinds), key=kinds.count)


def log_evidence_list(evidence: dict[int, Evidence], limit: int = 20) -> list[Evidence]:
    """The first ``limit`` log lines behind a log-derived series, in line order."""
    return [evidence[k] for k in sorted(evidence)[:limit]]
