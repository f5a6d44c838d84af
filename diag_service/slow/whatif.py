"""What-if straggler slowdown for pipeline-parallel traces (ByteDance ``bytedance_straggler_whatif``).

Lin et al., "Understanding Stragglers in Large Model Training Using What-if Analysis" (OSDI 2025)
define the straggler slowdown ``S`` (their Eq. 1) as the step time with the recorded operation
durations over the step time of an *ideal* run in which every compute operation takes the mean
duration of its type (over all workers, stages and steps) and every communication its transfer time;
``S_w`` (Eq. 4) puts back the recorded durations of one group of workers (a DP rank, a PP stage) into
the ideal run. They replay a full dependency graph of every operation.

This module is our own, smaller model of the same quantities (not their simulator): a dataflow
replay of Megatron's non-interleaved 1F1B schedule. For each step and DP rank, stage ``s`` runs
``min(p - s - 1, m)`` warm-up forwards, then alternates one forward and one backward, then drains the
backwards; forward ``j`` on stage ``s`` waits for forward ``j`` on stage ``s - 1`` plus a p2p latency,
backward ``j`` for backward ``j`` on stage ``s + 1`` plus the latency; the step ends when the slowest DP
rank's pipeline ends, plus the transfer time of the step's collectives and optimizer. Transfer times
are estimated from the trace: for each collective instance the minimum duration over the workers (the
last worker to arrive waits least), median over steps; the p2p latency is the median over steps of
the 10th percentile of p2p operation durations. ``eval/slow_eval.py`` compares the result with the
published ``result-*.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

COMPUTE_OPS = ("forward-compute", "backward-compute")
P2P_OPS = ("forward-send", "forward-recv", "backward-send", "backward-recv")


class WhatIfResult(BaseModel):
    """Straggler slowdown of a pipeline trace, in the paper's terms (times in the trace's unit, seconds)."""

    trace: str
    dp: int
    pp: int
    microbatches: int
    steps: int
    ideal_step_s: float = Field(description="Modelled step time with ideal (mean) compute and transfer-only comm.")
    observed_step_s: float = Field(description="Mean observed step time (first start to last end).")
    modelled_step_s: float = Field(description="Mean modelled step time with the recorded compute durations.")
    slowdown: float = Field(description="S = modelled / ideal (Eq. 1).")
    slowdown_observed: float = Field(description="Observed / ideal.")
    by_dp_rank: dict[int, float] = Field(description="S_w with only that DP rank's compute as recorded (Eq. 4).")
    by_stage: dict[int, float] = Field(description="S_w with only that stage's compute as recorded.")
    p2p_latency_s: float
    overhead_s: float = Field(description="Transfer time of the collectives and optimizer added to every step.")


@dataclass
class PipelineTrace:
    """Per-microbatch compute durations ``F``/``B`` of shape (steps, dp, pp, m), in seconds."""

    name: str
    steps: list[int]
    F: np.ndarray
    B: np.ndarray
    p2p_latency_s: float
    overhead_s: float
    observed_step_s: np.ndarray


def schedule_1f1b(stage: int, pp: int, m: int) -> list[tuple[int, int]]:
    """Megatron's non-interleaved 1F1B order on ``stage`` of ``pp`` with ``m`` microbatches: ``(0=F|1=B, mb)``."""
    warm = min(pp - stage - 1, m)
    ops = [(0, j) for j in range(warm)]
    for i in range(m - warm):
        ops += [(0, warm + i), (1, i)]
    ops += [(1, j) for j in range(m - warm, m)]
    return ops


def simulate_1f1b(F: np.ndarray, B: np.ndarray, latency_s: float) -> np.ndarray:
    """Pipeline makespan of each DP rank for one step.

    ``F``, ``B``: forward / backward durations of shape (dp, pp, m), seconds; ``latency_s``: p2p latency
    between stages. Returns an array of shape (dp,), seconds from the first forward. Vectorised over DP
    ranks (same schedule); O(pp x m) Python steps. Raises ``ValueError`` on mismatched shapes.
    """
    if F.shape != B.shape or F.ndim != 3:
        raise ValueError(f"F and B must have the same (dp, pp, m) shape, got {F.shape} and {B.shape}")
    dp, pp, m = F.shape
    end_f = np.full((dp, pp, m), np.nan)
    end_b = np.full((dp, pp, m), np.nan)
    sched = [schedule_1f1b(s, pp, m) for s in range(pp)]
    ptr = [0] * pp
    now = np.zeros((dp, pp))
    remaining = sum(len(x) for x in sched)
    while remaining:
        progressed = False
        for s in range(pp):
            while ptr[s] < len(sched[s]):
                kind, j = sched[s][ptr[s]]
                if kind == 0:
                    if s > 0:
                        if np.isnan(end_f[0, s - 1, j]):
                            break
                        dep = end_f[:, s - 1, j] + latency_s
                    else:
                        dep = np.zeros(dp)
                    t = np.maximum(now[:, s], dep) + F[:, s, j]
                    end_f[:, s, j] = t
                else:
                    if s < pp - 1:
                        if np.isnan(end_b[0, s + 1, j]):
                            break
                        dep = end_b[:, s + 1, j] + latency_s
                    else:
                        dep = end_f[:, s, j]
                    t = np.maximum(now[:, s], dep) + B[:, s, j]
                    end_b[:, s, j] = t
                now[:, s] = t
                ptr[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the 1F1B schedule is deadlock-free
            raise RuntimeError("1F1B replay made no progress")
    return now.max(axis=1)


def load_pipeline_trace(path: str | Path) -> PipelineTrace:
    """Read a ByteDance what-if parquet trace into per-microbatch compute arrays.

    Tensor-parallel peers of a (DP rank, stage) are reduced with ``max`` (they synchronise every layer).
    Raises ``ValueError`` if the file lacks the documented columns or has no compute operations.
    """
    import polars as pl

    df = pl.read_parquet(path).with_columns(pl.col("optype").cast(pl.Utf8))
    need = {"dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "seq_id", "mb_id"}
    if not need <= set(df.columns):
        raise ValueError(f"{path}: not a what-if trace, missing {sorted(need - set(df.columns))}")
    steps = sorted(df["step"].unique().to_list())
    si = {s: i for i, s in enumerate(steps)}
    dp, pp = int(df["dp_rank"].max()) + 1, int(df["stage"].max()) + 1
    comp = df.filter(pl.col("optype").is_in(COMPUTE_OPS) & (pl.col("mb_id") >= 0))
    if comp.height == 0:
        raise ValueError(f"{path}: no forward/backward compute operations")
    m = int(comp["mb_id"].max()) + 1
    arrs = []
    for op in COMPUTE_OPS:
        sub = (comp.filter(pl.col("optype") == op)
               .group_by("step", "dp_rank", "stage", "mb_id", "rank").agg(pl.col("duration").sum())
               .group_by("step", "dp_rank", "stage", "mb_id").agg(pl.col("duration").max()))
        a = np.zeros((len(steps), dp, pp, m))
        st = np.array([si[s] for s in sub["step"].to_list()], dtype=np.int64)
        a[st, sub["dp_rank"].to_numpy(), sub["stage"].to_numpy(), sub["mb_id"].to_numpy()] = sub["duration"].to_numpy()
        arrs.append(a)
    p2p = df.filter(pl.col("optype").is_in(P2P_OPS))
    if p2p.height:
        lat_df = p2p.group_by("step", "optype").agg(pl.col("duration").quantile(0.1)).group_by("optype").agg(
            pl.col("duration").median())
        lat = float(lat_df["duration"].min())
    else:
        lat = 0.0
    other = df.filter(~pl.col("optype").is_in(COMPUTE_OPS + P2P_OPS + ("gc",)))
    inst = other.group_by("step", "optype", "seq_id").agg(pl.col("duration").min()).group_by("optype").agg(
        pl.col("duration").median())
    overhead = float(inst["duration"].sum()) if inst.height else 0.0
    obs = (df.group_by("step").agg(((pl.col("start_ts") + pl.col("duration")).max() - pl.col("start_ts").min()).alias("T"))
           .sort("step")["T"].to_numpy())
    return PipelineTrace(Path(path).stem, steps, arrs[0], arrs[1], lat, overhead, obs.astype(float))


def whatif_slowdown(trace: PipelineTrace) -> WhatIfResult:
    """S, and S_w per DP rank and per stage, with the 1F1B replay (see the module docstring)."""
    ns, dp, pp, m = trace.F.shape
    fm, bm = float(trace.F.mean()), float(trace.B.mean())
    lat, ovh = trace.p2p_latency_s, trace.overhead_s
    ideal = float(simulate_1f1b(np.full((1, pp, m), fm), np.full((1, pp, m), bm), lat).max()) + ovh
    modelled = np.array([simulate_1f1b(trace.F[i], trace.B[i], lat).max() + ovh for i in range(ns)])

    def swap(mask_dp: slice | int, mask_stage: slice | int) -> float:
        t = []
        for i in range(ns):
            f = np.full((dp, pp, m), fm)
            b = np.full((dp, pp, m), bm)
            f[mask_dp, mask_stage] = trace.F[i][mask_dp, mask_stage]
            b[mask_dp, mask_stage] = trace.B[i][mask_dp, mask_stage]
            t.append(simulate_1f1b(f, b, lat).max() + ovh)
        return float(np.mean(t)) / ideal

    by_dp = {d: round(swap(d, slice(None)), 4) for d in range(dp)}
    by_stage = {s: round(swap(slice(None), s), 4) for s in range(pp)}
    return WhatIfResult(
        trace=trace.name, dp=dp, pp=pp, microbatches=m, steps=ns, ideal_step_s=round(ideal, 6),
        observed_step_s=round(float(trace.observed_step_s.mean()), 6), modelled_step_s=round(float(modelled.mean()), 6),
        slowdown=round(float(modelled.mean()) / ideal, 4),
        slowdown_observed=round(float(trace.observed_step_s.mean()) / ideal, 4),
        by_dp_rank=dict(sorted(by_dp.items(), key=lambda kv: -kv[1])),
        by_stage=dict(sorted(by_stage.items(), key=lambda kv: -kv[1])),
        p2p_latency_s=round(lat, 6), overhead_s=round(ovh, 6),
    )


def relative_error(a: float, b: float) -> float:
    """|a - b| / |b| (inf when b is 0)."""
    return abs(a - b) / abs(b) if b else math.inf
