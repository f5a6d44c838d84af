"""The ``stepfun`` source: the StepFun InfiniteHBD node-fault trace replayed as one cluster-wide job (a model:
the fault arrivals, nodes and classes are real, the recovery parameters are declared assumptions)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.domain import Category, FailureMode
from diag_service.etpr.schema import Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, open_text, rows_to_frame

_STEPFUN_CLASS = {
    "GPU": Category.GPU_HARDWARE, "NIC": Category.NETWORK, "Parameter Plane Cable": Category.NETWORK,
    "File System": Category.STORAGE, "Unknown Error": Category.UNKNOWN, "Other Failures": Category.UNKNOWN,
    "Stress Test Failure": Category.UNKNOWN, "Training Task Troubleshooting": Category.UNKNOWN,
}
STEPFUN_T0 = datetime(2024, 3, 30, tzinfo=UTC).timestamp()  # trace start (README: 348 days from 2024-03-30)


def stepfun_category(level: str, klass: str) -> Category:
    """Our mapping of the StepFun fault taxonomy (Level, Class) to :class:`Category`."""
    if klass in _STEPFUN_CLASS:
        return _STEPFUN_CLASS[klass]
    return Category.INFRASTRUCTURE if level in ("Hardware Failure", "Software Failure") else Category.UNKNOWN


def load_stepfun(path: Path, issues: list[Issue], nodes: int = 400, gpus_per_node: int = 8,
                 detect_s: float = 300.0, recover_s: float = 1800.0, init_s: float = 600.0,
                 ckpt_every_s: float = 3600.0) -> list[dict[str, Any]]:
    """A model job: all ``nodes`` x ``gpus_per_node`` GPUs train for the 349 days of the StepFun trace, and
    every node ``fault_start`` stops it (fail-stop on that node, category from the fault class).

    Real: the fault times, nodes and classes. Declared assumptions (parameters, seconds): the fault is
    detected ``detect_s`` after it starts (onset = fault_start), the faulty node is swapped for a spare
    and the job relaunched ``recover_s`` after detection, start-up takes ``init_s``, checkpoints every
    ``ckpt_every_s``. Faults that arrive while the job is already recovering join that episode.
    """
    try:
        with open_text(path) as f:
            trace = json.load(f)
    except (ValueError, RecursionError, OSError) as exc:  # JSONDecodeError, a number over the digit limit
        raise EtprInputError(f"{path}: not the StepFun fault_trace.json ({exc})") from exc
    job = f"stepfun-{nodes}-node-replay"
    starts = sorted(((float(e["event_time"]) * 86400.0 + STEPFUN_T0, e) for e in trace
                    if isinstance(e, dict) and e.get("event_type") == "fault_start" and "event_time" in e),
                    key=lambda x: x[0])
    end = max((float(e["event_time"]) for e in trace if isinstance(e, dict) and "event_time" in e), default=0.0)
    end_t = end * 86400.0 + STEPFUN_T0
    rows: list[dict[str, Any]] = [
        {"job": job, "event": "allocated", "time": STEPFUN_T0, "gpus": nodes * gpus_per_node},
        {"job": job, "event": "started", "time": STEPFUN_T0},
    ]
    first = STEPFUN_T0 + init_s
    busy_until = STEPFUN_T0
    merged = 0
    attempt_starts = [first]
    for t, e in starts:
        if t < busy_until:
            merged += 1
            continue
        ft = e.get("fault_type") or {}
        cat = stepfun_category(str(ft.get("Level", "")), str(ft.get("Class", "")))
        t_det = t + detect_s
        rows.append({"job": job, "event": "failure", "time": t_det, "onset_time": t,
                     "mode": FailureMode.FAIL_STOP.value, "category": cat.value, "node": e.get("node_id"),
                     "cause": f"{ft.get('Class', '?')}: {ft.get('Desc', '?')}"})
        rows.append({"job": job, "event": "restart", "time": t_det + recover_s})
        busy_until = t_det + recover_s + init_s
        attempt_starts.append(busy_until)
    for i, a in enumerate(attempt_starts):
        rows.append({"job": job, "event": "first_step", "time": a})
        nxt = starts_after(a, rows) if i + 1 < len(attempt_starts) else end_t
        k = 1
        while a + k * ckpt_every_s < nxt:
            rows.append({"job": job, "event": "checkpoint_saved", "time": a + k * ckpt_every_s})
            k += 1
    rows.append({"job": job, "event": "finished", "time": end_t, "status": "succeeded"})
    add_issue(issues, "assumption", "stepfun_model",
           f"StepFun replay: one job on {nodes} nodes x {gpus_per_node} GPUs for the whole trace; every node fault "
           f"stops it; detection {detect_s:.0f} s, spare swap + relaunch {recover_s:.0f} s, start-up {init_s:.0f} s, "
           f"checkpoint every {ckpt_every_s:.0f} s are assumptions, the fault times/nodes/classes are real", 1, [job])
    add_issue(issues, "assumption", "stepfun_merged", "node fault during an ongoing recovery: merged into that episode",
           merged)
    return rows


def starts_after(t: float, rows: list[dict[str, Any]]) -> float:
    """Time of the first ``failure`` onset after ``t`` in ``rows`` (or +inf)."""
    return min((r["onset_time"] for r in rows if r["event"] == "failure" and r["onset_time"] > t), default=math.inf)



def _detect(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and (name == "fault_trace.json" or "stepfun" in name)


@register_source("stepfun", detect=_detect, priority=30,
                 description="StepFun InfiniteHBD fault_trace.json (node faults replayed as one job)")
def load_stepfun_source(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of :func:`load_stepfun` (default model parameters)."""
    return rows_to_frame(load_stepfun(path, issues))
