"""Synthetic per-rank timing feeds with known faults, for tests, the benchmark and examples.

Model of one synchronous data-parallel step (all times in seconds): every rank starts the step when it
finished the previous one, loads data (``data``), computes (``compute``), then enters the gradient
all-reduce; the collective completes ``transfer`` seconds after the *last* rank arrives, so the others
wait in it (their ``comm`` grows: they are victims, not culprits). Noise: every phase is multiplied by
an independent log-normal factor (``jitter`` = sigma of its log), and the first ``warmup`` steps are
slower (x 3 at step 0, decaying geometrically). Periodic steps: every ``eval_every`` steps every rank
spends ``eval_s`` more in compute (an evaluation), every ``ckpt_every`` steps rank 0 spends
``ckpt_s`` more (writing a checkpoint) while the others wait.

Faults (:class:`Fault`): ``compute``/``data`` make the ranks' phase ``factor`` times longer from
``onset`` (on ``duty`` of every ``period`` steps when ``period > 0``); ``comm`` adds ``extra_s`` to the
ranks' *own* transfer time, as a profiler measuring transfer without waiting would see a slow link
(``comm_s`` excludes waiting when ``comm_model="transfer"``); with ``comm_model="traced"`` it instead
delays the ranks' *issue* of the collective by ``extra_s`` (the lab's slow-link fault: its sends are late,
so the others wait for it inside the collective), and every record carries ``comm_wait``, the rank's
wait for the last rank to issue (what a collective trace gives); ``job`` makes every rank's compute
``factor`` times longer. ``ranks`` may be a list of ranks or ``"node:<name>"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from diag_service.slow.feeds import StepBatch


@dataclass(frozen=True)
class Fault:
    """One injected slowdown (see the module docstring)."""

    kind: Literal["compute", "data", "comm", "job"]
    onset: int
    factor: float = 1.5
    ranks: tuple[int, ...] | str = ()
    period: int = 0
    duty: int = 1
    extra_s: float = 0.0
    until: int | None = None


@dataclass
class SynthConfig:
    """Shape and noise of a synthetic job (seconds)."""

    ranks: int = 16
    ranks_per_node: int = 8
    steps: int = 200
    compute_s: float = 0.8
    data_s: float = 0.05
    transfer_s: float = 0.15
    jitter: float = 0.03
    warmup: int = 5
    eval_every: int = 0
    eval_s: float = 2.0
    ckpt_every: int = 0
    ckpt_s: float = 3.0
    start_time: float = 1_700_000_000.0
    comm_model: Literal["sync", "transfer", "traced"] = "sync"
    seed: int = 0
    faults: list[Fault] = field(default_factory=list)


def _fault_mask(f: Fault, step: int, n: int, nodes: np.ndarray, node_names: list[str]) -> np.ndarray:
    if step < f.onset or (f.until is not None and step > f.until):
        return np.zeros(n, bool)
    if f.period > 0 and (step - f.onset) % f.period >= f.duty:
        return np.zeros(n, bool)
    if f.kind == "job":
        return np.ones(n, bool)
    if isinstance(f.ranks, str):
        name = f.ranks.split(":", 1)[1]
        return nodes == node_names.index(name)
    m = np.zeros(n, bool)
    m[list(f.ranks)] = True
    return m


def iter_steps(cfg: SynthConfig):  # noqa: ANN201 - a generator of StepBatch
    """Yield one :class:`StepBatch` per step (all ranks), in order. Vectorised over ranks."""
    rng = np.random.default_rng(cfg.seed)
    n = cfg.ranks
    nodes = (np.arange(n) // max(1, cfg.ranks_per_node)).astype(np.int32)
    node_names = [f"node{i}" for i in range(int(nodes.max()) + 1)]
    ends = np.full(n, cfg.start_time)
    ranks = np.arange(n)
    for step in range(cfg.steps):
        warm = 1.0 + 2.0 * (0.5 ** step) if step < cfg.warmup else 1.0
        c = cfg.compute_s * warm * np.exp(rng.normal(0, cfg.jitter, n))
        d = cfg.data_s * np.exp(rng.normal(0, cfg.jitter, n))
        own = cfg.transfer_s * np.exp(rng.normal(0, cfg.jitter, n))
        late = np.zeros(n)
        if cfg.eval_every and step > 0 and step % cfg.eval_every == 0:
            c = c + cfg.eval_s
        if cfg.ckpt_every and step > 0 and step % cfg.ckpt_every == 0:
            c[0] += cfg.ckpt_s
        for f in cfg.faults:
            m = _fault_mask(f, step, n, nodes, node_names)
            if not m.any():
                continue
            if f.kind in ("compute", "job"):
                c[m] *= f.factor
            elif f.kind == "data":
                d[m] *= f.factor
            elif f.kind == "comm" and cfg.comm_model == "traced":
                late[m] += f.extra_s
            elif f.kind == "comm":
                own[m] += f.extra_s
        start = ends.copy()
        ready = start + d + c
        wait = None
        if cfg.comm_model in ("sync", "traced"):
            issue = ready + late
            done = issue.max() + own.max()
            comm = done - ready
            end = np.full(n, done)
            if cfg.comm_model == "traced":
                wait = issue.max() - issue
        else:
            comm = own
            end = ready + own
        ends = np.full(n, end.max()) if cfg.comm_model == "transfer" else end
        yield StepBatch.from_columns(
            step=np.full(n, step), rank=ranks, start=start, end=end, compute=c, comm=comm, data=d, node=nodes,
            node_names=node_names, comm_wait=wait,
        )


def make_feed(cfg: SynthConfig) -> StepBatch:
    """The whole synthetic feed as one batch (steps in order, ranks in order within a step)."""
    parts = list(iter_steps(cfg))
    return StepBatch.concat(parts)


def to_records(batch: StepBatch) -> list[dict[str, object]]:
    """The batch as lab-format dicts (``rank, node, step, start, end, compute_s, comm_s, data_s``, plus
    ``comm_wait_s`` when the batch carries it)."""
    out = []
    wait = batch.comm_wait
    for i in range(len(batch)):
        rec: dict[str, object] = {
            "rank": int(batch.rank[i]),
            "node": batch.node_names[int(batch.node[i])] if batch.node[i] >= 0 else None,
            "step": int(batch.step[i]), "start": float(batch.start[i]), "end": float(batch.end[i]),
            "compute_s": float(batch.compute[i]), "comm_s": float(batch.comm[i]), "data_s": float(batch.data[i]),
        }
        if np.isfinite(wait[i]):
            rec["comm_wait_s"] = float(wait[i])
        out.append(rec)
    return out
