"""The ``glm130b`` source: ``glm130b_incidents.csv`` from the public GLM-130B logbook, as one 768-GPU job."""

from __future__ import annotations

import csv
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.domain import Category, FailureMode
from diag_service.etpr.schema import Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import LoadOptions, add_issue, rows_to_frame

GLM_GPUS = 768  # 96 DGX-A100 nodes x 8 GPUs (GLM-130B paper, sec. 3; logbook "96 nodes")
GLM_ITER_S = 88.5  # s/iteration at global batch 4224 (logbook "Speed Testing")
GLM_TFLOPS_EXPECTED = 134.0  # TFLOPS at global batch 4224 (logbook "Speed Testing")
GLM_UTC_OFFSET_H = 8  # headings are local UTC+8, run names UTC (hypothesis in the traces README)
GLM_END_LOCAL = "2022-07-03 00:00"  # end of pre-training (GLM-130B paper: trained May 6 - July 3, 2022)

_GLM_CATEGORY = {
    ("infra_hardware", "gpu_missing"): Category.GPU_HARDWARE,
    ("infra_hardware", "nvlink_error"): Category.GPU_HARDWARE,
    ("infra_hardware", "slow_node_suspected"): Category.GPU_HARDWARE,
    ("infra_hardware", None): Category.INFRASTRUCTURE,
    ("infra_storage", None): Category.STORAGE,
    ("infra_network", None): Category.NETWORK,
    ("training_instability", "nan_loss_after_data_change"): Category.DATA,
    ("training_instability", None): Category.CONFIG,
}


def glm_category(cat: str, sub: str) -> Category:
    """Our mapping of the GLM-130B silver labels (``proposed_category``, ``proposed_subcategory``)."""
    return _GLM_CATEGORY.get((cat, sub)) or _GLM_CATEGORY.get((cat, None)) or Category.UNKNOWN


def _glm_run_time(run_id: str) -> float | None:
    m = re.search(r"(\d{4})\.(\d{2})\.(\d{2})-(\d{2}):(\d{2}):(\d{2})", run_id)
    if not m:
        return None
    y, mo, d, h, mi, s = map(int, m.groups())
    return datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()


def _glm_local(date: str, tm: str) -> float | None:
    try:
        dt = datetime.strptime(f"{date} {tm or '00:00'}", "%Y-%m-%d %H:%M")
    except ValueError:
        return None
    return (dt.replace(tzinfo=UTC) - timedelta(hours=GLM_UTC_OFFSET_H)).timestamp()


def load_glm130b(path: Path, issues: list[Issue], init_s: float = 1200.0, init_s_after_upgrade: float = 600.0
                 ) -> list[dict[str, Any]]:
    """The GLM-130B pre-training run (2022-05-06 to 2022-07-03) as one job's lifecycle events.

    From ``glm130b_incidents.csv`` (derived from the public logbook; labels are a silver set): each run
    name is a (re)launch at that UTC time; each fail-stop heading (local UTC+8 time) is a failure, each
    planned change a ``killed`` (cause ``planned: ...``) followed by a new allocation at the relaunch;
    the fail-slow entry (127 vs 134 TFLOPS) is a ``slow_detected`` with r = 127/134 until the next
    relaunch; restarts that go back to the same step as the previous relaunch roll back to it
    (``rollback_time``). Declared assumptions (parameters): ``init_s`` seconds from launch to first
    step (``init_s_after_upgrade`` after the 2022-06-06 file-system upgrade, when loading took about a
    minute), checkpoints every 500 iterations until the first failure and every 100 after it (logbook),
    88.5 s per iteration. Units: seconds, GPUs.
    """
    job = "glm-130B"
    with open(path, encoding="utf-8") as f:
        entries = list(csv.DictReader(f))
    rows: list[dict[str, Any]] = []
    upgrade = _glm_local("2022-06-06", "17:00") or 0.0
    end = _glm_local(*GLM_END_LOCAL.split(" ")) or 0.0
    launches: list[tuple[float, dict[str, Any]]] = []  # (relaunch time, entry)
    skipped = []
    first_failure: float | None = None
    last_from_step: str | None = None
    prev_launch: float | None = None
    for e in entries:
        run_times = [t for t in (_glm_run_time(r) for r in (e.get("run_ids") or "").split(";") if r.strip()) if t]
        mode = e.get("proposed_mode", "")
        heading_t = _glm_local(e.get("date", ""), e.get("time_local", ""))
        if mode == "launch" and run_times:
            t0 = run_times[0]
            rows += [{"job": job, "event": "submitted", "time": t0, "gpus": GLM_GPUS,
                      "expected_throughput": GLM_TFLOPS_EXPECTED},
                     {"job": job, "event": "allocated", "time": t0},
                     {"job": job, "event": "started", "time": t0}]
            launches.append((t0, e))
            prev_launch = t0
            continue
        if mode == "fail-slow":
            if heading_t is not None:
                node = re.search(r"\bn3\d{4}\b", e.get("text", ""))
                rows.append({"job": job, "event": "slow_detected", "time": heading_t, "ratio": 127.0 / 134.0,
                             "category": Category.UNKNOWN.value, "node": node.group(0) if node else None,
                             "cause": e.get("proposed_subcategory")})
            continue
        if not run_times:
            skipped.append(f"line {e.get('source_line')}")
            continue
        relaunch = run_times[0]
        stop_t = heading_t
        if stop_t is None or not (prev_launch is not None and prev_launch < stop_t <= relaunch + 600):
            add_issue(issues, "assumption", "glm_heading_time",
                   "GLM-130B entry whose heading time is missing or inconsistent with the run names: the stop is "
                   "placed at the relaunch time (no recovery time counted)", 1, [f"line {e.get('source_line')}"])
            stop_t = relaunch
        stop_t = min(stop_t, relaunch)
        cat, sub = e.get("proposed_category", ""), e.get("proposed_subcategory", "")
        node = re.search(r"\bn3\d{4}\b", e.get("text", ""))
        from_step = (e.get("restart_from_step") or "").split(";")[0] or None
        rollback = None
        if from_step and from_step == last_from_step and prev_launch is not None:
            rollback = prev_launch + (init_s if prev_launch < upgrade else init_s_after_upgrade)
        if from_step:
            last_from_step = from_step
        if mode == "fail-stop":
            rows.append({"job": job, "event": "failure", "time": stop_t, "mode": FailureMode.FAIL_STOP.value,
                         "category": glm_category(cat, sub).value, "node": node.group(0) if node else None,
                         "cause": sub})
            rows.append({"job": job, "event": "restart", "time": relaunch, "from_step": from_step,
                         "rollback_time": rollback})
            first_failure = first_failure or stop_t
        else:  # planned change or maintenance: the run is stopped and relaunched
            rows.append({"job": job, "event": "killed", "time": stop_t, "cause": f"planned: {sub}"})
            rows.append({"job": job, "event": "allocated", "time": relaunch})
            rows.append({"job": job, "event": "started", "time": relaunch, "from_step": from_step,
                         "rollback_time": rollback})
        launches.append((relaunch, e))
        prev_launch = relaunch
        for extra in run_times[1:]:  # a second relaunch in the same entry: the first relaunch failed
            rows.append({"job": job, "event": "failure", "time": extra, "mode": FailureMode.FAIL_STOP.value,
                         "category": glm_category(cat, sub).value, "cause": f"{sub}: relaunch failed"})
            rows.append({"job": job, "event": "restart", "time": extra})
            launches.append((extra, e))
            prev_launch = extra
    add_issue(issues, "assumption", "glm_no_run_id", "GLM-130B entry without a run name: no relaunch time, skipped",
           len(skipped), skipped)
    # first steps and checkpoints of each attempt (declared assumptions); an attempt trains until its stop
    launches.sort(key=lambda x: x[0])
    stops = sorted(r["time"] for r in rows if r["event"] in ("failure", "killed"))
    for i, (t, _e) in enumerate(launches):
        nxt = launches[i + 1][0] if i + 1 < len(launches) else end
        nxt = min([s for s in stops if t < s <= nxt] or [nxt])
        first = t + (init_s if t < upgrade else init_s_after_upgrade)
        rows.append({"job": job, "event": "first_step", "time": first})
        every = 500 if (first_failure is None or t < first_failure) else 100
        k = 1
        while first + k * every * GLM_ITER_S < nxt:
            rows.append({"job": job, "event": "checkpoint_saved", "time": first + k * every * GLM_ITER_S})
            k += 1
    rows.append({"job": job, "event": "finished", "time": end, "status": "succeeded"})
    rows.sort(key=lambda r: r["time"])
    add_issue(issues, "assumption", "glm_parameters",
           f"GLM-130B timeline: {GLM_GPUS} GPUs; launch-to-first-step {init_s:.0f} s ({init_s_after_upgrade:.0f} s "
           f"after the 2022-06-06 upgrade); checkpoints every 500 then 100 iterations at {GLM_ITER_S} s/iteration; "
           f"headings read as UTC+{GLM_UTC_OFFSET_H}; end of training {GLM_END_LOCAL} local", 1, [job])
    return rows



def _detect(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name.startswith("glm130b") and name.endswith(".csv")


@register_source("glm130b", detect=_detect, priority=20,
                 description="glm130b_incidents.csv (the public GLM-130B logbook, one 768-GPU job)")
def load_glm130b_source(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of :func:`load_glm130b`."""
    return rows_to_frame(load_glm130b(path, issues))
