"""Loaders for the public traces in ``/work/shared/data/traces`` (see each folder's README).

* ``bytedance_straggler_whatif/trace-*.parquet`` (Lin et al., OSDI 2025): one row per operation
  (``dp_rank, stage, rank, step, optype, start_ts, duration, ...``), start times relative to the step,
  in seconds (inferred: mean step times of 2-47 s). :func:`load_bytedance_feed` turns it into per-rank
  step records: ``compute_s`` = forward + backward compute + optimizer, ``comm_s`` = the rest of the
  rank's step (p2p and collectives, including waiting; their intervals overlap, so their durations are
  not summed), ``stage`` = PP stage (the peer group). The sampled steps are
  laid end to end on a synthetic clock (``start`` = sum of the previous steps' durations) so that lost
  time is in seconds.
* ``alibaba_pai2020_minibatch/job_N_norm.csv`` (Weng et al., NSDI 2022): ``worker, gpu, time,
  batch_time_norm``; mini-batch times normalised to 0-1000 (no unit), sampled every 10 ``time`` units.
  :func:`load_alibaba_feed` maps worker -> rank, ``time`` -> step and the normalised batch time ->
  ``compute_s``; the feed's units are "normalised".
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np

from diag_service.slow.feeds import Feed, FeedError, StepBatch
from diag_service.slow.models import FeedStats

BD_COMPUTE = ("forward-compute", "backward-compute", "optimizer")


def _rewound(fh: BinaryIO) -> BinaryIO:
    fh.seek(0)
    return fh


def is_bytedance_trace(columns: list[str]) -> bool:
    """Whether a parquet file's columns are the what-if trace's."""
    return {"dp_rank", "stage", "optype", "start_ts", "duration"} <= set(columns)


def is_alibaba_trace(columns: list[str]) -> bool:
    """Whether a CSV's columns are the PAI mini-batch trace's."""
    return {"worker", "batch_time_norm"} <= set(columns)


def load_bytedance_feed(path: str | Path, fh: BinaryIO | None = None) -> Feed:
    """Per-rank step records from a ByteDance what-if parquet trace (see the module docstring).

    Raises :class:`~diag_service.slow.feeds.FeedError` if the file cannot be read or lacks the columns.
    """
    import polars as pl

    try:
        df = pl.read_parquet(path if fh is None else _rewound(fh))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise FeedError(f"cannot read {path}: {exc}") from exc
    if not is_bytedance_trace(df.columns):
        raise FeedError(f"{path}: not a what-if trace (columns {df.columns})")
    df = df.with_columns(pl.col("optype").cast(pl.Utf8), (pl.col("start_ts") + pl.col("duration")).alias("end_ts"))
    per = (df.group_by("step", "rank").agg(
        pl.col("dp_rank").first(), pl.col("stage").first(),
        pl.col("start_ts").min().alias("t0"), pl.col("end_ts").max().alias("t1"),
        pl.col("duration").filter(pl.col("optype").is_in(BD_COMPUTE)).sum().alias("compute"),
    ).with_columns((pl.col("t1") - pl.col("t0") - pl.col("compute")).clip(lower_bound=0.0).alias("comm")).sort("step", "rank"))
    step_t = df.group_by("step").agg((pl.col("end_ts").max() - pl.col("start_ts").min()).alias("T")).sort("step")
    offset = dict(zip(step_t["step"].to_list(), np.concatenate([[0.0], np.cumsum(step_t["T"].to_numpy())[:-1]]), strict=True))
    off = np.array([offset[s] for s in per["step"].to_list()])
    batch = StepBatch.from_columns(
        step=per["step"].to_numpy(), rank=per["rank"].to_numpy().astype(np.int64),
        start=off + per["t0"].to_numpy().astype(float), end=off + per["t1"].to_numpy().astype(float),
        compute=per["compute"].to_numpy().astype(float), comm=per["comm"].to_numpy().astype(float),
        stage=per["stage"].to_numpy().astype(np.int32),
    )
    stats = FeedStats(source=str(path), format="bytedance_trace", records=len(batch), phases=batch.phases(),
                      warnings=["ByteDance what-if trace: sampled steps laid end to end on a synthetic clock"])
    return Feed(batch, stats)


def load_alibaba_feed(path: str | Path, fh: BinaryIO | None = None) -> Feed:
    """Per-worker records from a PAI ``job_N_norm.csv`` (normalised units; see the module docstring).

    Raises :class:`~diag_service.slow.feeds.FeedError` if the file cannot be read or lacks the columns.
    """
    import polars as pl

    try:
        df = pl.read_csv(path if fh is None else _rewound(fh), infer_schema_length=10000)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise FeedError(f"cannot read {path}: {exc}") from exc
    if not is_alibaba_trace(df.columns):
        raise FeedError(f"{path}: not a PAI mini-batch trace (columns {df.columns})")
    df = df.drop_nulls(["worker", "time", "batch_time_norm"]).filter(pl.col("batch_time_norm") >= 0)
    batch = StepBatch.from_columns(
        step=df["time"].to_numpy().astype(np.int64), rank=df["worker"].to_numpy().astype(np.int64),
        compute=df["batch_time_norm"].to_numpy().astype(float),
    )
    stats = FeedStats(source=str(path), format="alibaba_trace", records=len(batch), phases=["compute"],
                      warnings=["PAI trace: mini-batch times are normalised to 0-1000 (no unit); 'seconds' are normalised "
                                "units, and the batch time stands for compute"])
    return Feed(batch, stats, units="normalised")
