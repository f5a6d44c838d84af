"""The ``lab`` source: runs of the fault-injection lab (``diag lab``): a run folder (``events.jsonl`` +
``timing.jsonl`` + ``truth.json`` + ``run.json``), a folder of runs (``diag lab suite``), or a run's own
``events.jsonl`` (its job id is the run, not the file: the lab's events carry none)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.domain import FailureMode
from diag_service.etpr.schema import Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, read_json_lines, rows_to_frame
from diag_service.fsutil import read_regular
from diag_service.limits import LIMITS

LAB_PROGRESS_EVERY = 5  # steps per synthesised progress sample (a trainer logs every N steps)

def _seconds(r: dict[str, Any]) -> float | None:
    """A record's own step time (``step_time_s``, else ``end - start``), None when it gives none."""
    try:
        v = r.get("step_time_s")
        d = float(v) if v is not None else float(r["end"]) - float(r["start"])
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
        return None
    return d if math.isfinite(d) and d >= 0 else None


def timing_progress(timing: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    """Progress samples from per-rank step timings (the lab's, or a live job's ``timing.jsonl``): a step ends when
    its slowest rank ends; every ``LAB_PROGRESS_EVERY`` steps, throughput = steps / the seconds those steps took.
    The steps' own time is the slowest rank's step time (``step_time_s`` or ``end - start``) when every step of the
    sample has one: time between steps (an evaluation pass, a checkpoint save, a pause of the job's own) is not a
    slower rate (trial 44 r14, a clean run with evaluations every 40 steps, was booked 18.5 % reduced quality);
    otherwise the wall-clock seconds since the previous sample."""
    ends: dict[tuple[int, int], float] = {}
    took: dict[tuple[int, int], float] = {}
    for r in timing:
        try:
            key = (int(r.get("attempt", 0) or 0), int(r["step"]))
            end = float(r["end"])
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
            continue
        if not math.isfinite(end) or not 0 <= key[1] <= LIMITS.max_step or not 0 <= key[0] <= LIMITS.max_attempt:
            continue  # the bounds a timing feed has (diag_service.limits)
        ends[key] = max(ends.get(key, end), end)
        d = _seconds(r)
        if d is not None:
            took[key] = max(took.get(key, d), d)
    out: list[dict[str, Any]] = []
    by_att: dict[int, list[tuple[int, float]]] = {}
    for (att, step), end in sorted(ends.items()):
        by_att.setdefault(att, []).append((step, end))
    for att, steps in by_att.items():
        for i in range(LAB_PROGRESS_EVERY, len(steps), LAB_PROGRESS_EVERY):
            (s0, t0), (s1, t1) = steps[i - LAB_PROGRESS_EVERY], steps[i]
            own = [took.get((att, s)) for s, _ in steps[i - LAB_PROGRESS_EVERY + 1:i + 1]]
            sec = sum(own) if all(d is not None for d in own) else t1 - t0  # type: ignore[misc]
            if t1 > t0 and sec > 0:
                out.append({"job": job, "event": "progress", "time": t1, "step": s1, "throughput": (s1 - s0) / sec})
    return out


def load_lab_run(run_dir: Path, issues: list[Issue], use_truth: bool = True, job: str | None = None
                 ) -> list[dict[str, Any]]:
    """Rows of one lab run: its ``events.jsonl`` plus progress samples from ``timing.jsonl``.

    The lab's events have no job id and no GPU count: the job id is ``job``, else the run folder's name; the GPU
    count is the ``ranks`` of the ``started`` event (each CPU rank stands for one GPU). With
    ``use_truth``, the scenario's ``truth.json`` (failure mode, category, faulty node, onset time)
    fills the failure events' attribution, and a fail-slow scenario gets a ``slow_detected`` at its
    onset; this is ground truth standing in for ``diag diagnose`` and is reported as an assumption.
    """
    job = job or run_dir.name
    events = read_json_lines(run_dir / "events.jsonl", issues)
    rows: list[dict[str, Any]] = []
    gpus: float | None = None
    for e in events:
        row = {k: v for k, v in e.items() if not isinstance(v, dict | list)}
        row["job"] = job
        if e.get("event") == "started" and e.get("ranks") is not None and gpus is None:
            gpus = _lab_float(e["ranks"])
            row["gpus"] = gpus
        rows.append(row)
    if gpus is None:
        run = run_dir / "run.json"
        if run.exists():
            try:
                gpus = _lab_float(json.loads(read_regular(run, _LAB_JSON_BYTES, run_dir)).get("ranks"))
                if rows:
                    rows[0]["gpus"] = gpus
            except (OSError, ValueError, AttributeError, RecursionError):
                pass
    rows += timing_progress(read_json_lines(run_dir / "timing.jsonl", issues), job)
    truth_path = run_dir / "truth.json"
    if use_truth and truth_path.exists():
        try:
            truth = json.loads(read_regular(truth_path, _LAB_JSON_BYTES, run_dir))
        except (OSError, ValueError, RecursionError):
            truth = None
        if not isinstance(truth, dict):
            truth = {}
            add_issue(issues, "warning", "bad_truth", f"{truth_path}: not a readable JSON object; ignored", 1, [job])
        if truth.get("fault_fired") and not truth.get("control"):
            mode, cat, node = truth.get("failure_mode"), truth.get("category"), truth.get("faulty_node")
            onset = truth.get("onset_time")
            if mode == FailureMode.FAIL_SLOW.value and onset is not None:
                rows.append({"job": job, "event": "slow_detected", "time": onset, "mode": mode,
                             "category": cat, "node": node, "cause": truth.get("scenario")})
            else:
                first = True
                on = _lab_float(onset)
                for row in rows:
                    t = _lab_float(row.get("time"))
                    if row.get("event") in ("failure", "hang_detected") and (on is None or (t is not None and t >= on)):
                        row.setdefault("mode", mode)
                        row.setdefault("category", cat)
                        row.setdefault("cause", truth.get("scenario"))
                        if row.get("node") is None:
                            row["node"] = node
                        if first and onset is not None and row.get("last_progress_time") is None:
                            row["onset_time"] = onset
                        first = False
            add_issue(issues, "assumption", "lab_truth_attribution",
                   "lab run: failure mode, category, node and onset come from truth.json (ground truth), "
                   "standing in for diag diagnose", 1, [job])
    rows.sort(key=lambda r: _lab_float(r.get("time")) or 0.0)
    return rows


#: Largest ``run.json`` / ``truth.json`` of a lab run read (they are a few hundred bytes).
_LAB_JSON_BYTES = 1 << 20


def _lab_float(v: Any) -> float | None:  # noqa: ANN401 - any JSON value
    """A finite number from a lab file's value, else None (the row is then validated like any other)."""
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def find_lab_runs(root: Path) -> list[Path]:
    """Lab run folders under ``root`` (``root`` itself if it holds ``events.jsonl``)."""
    if (root / "events.jsonl").exists():
        return [root]
    return sorted(p.parent for p in root.glob("*/events.jsonl"))



#: Files the lab runner writes beside ``events.jsonl`` (diag_service/lab/runner.py); either marks a run folder.
LAB_RUN_MARKERS = ("run.json", "truth.json")


def is_lab_events_file(path: Path) -> bool:
    """True for a lab run's own ``events.jsonl``: the file of that name with ``run.json`` or ``truth.json``
    beside it."""
    return path.is_file() and path.name == "events.jsonl" and any((path.parent / m).is_file() for m in LAB_RUN_MARKERS)


def _detect(path: Path) -> bool:
    if path.is_dir():
        return bool(find_lab_runs(path))
    return is_lab_events_file(path)


@register_source("lab", detect=_detect, priority=10,
                 description="a fault-injection lab run folder, a folder of runs, or a run's events.jsonl")
def load_lab(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of every lab run at ``path`` (:func:`load_lab_run`). ``options.job_id`` replaces the run
    folder's name as the job id; it names one job, so it is refused (:class:`EtprInputError`) for a folder
    of several runs. Raises :class:`EtprInputError` when ``path`` holds no run or is a file other than
    ``events.jsonl``."""
    if path.is_file() and path.name != "events.jsonl":
        raise EtprInputError(f"{path}: the lab source reads a run's events.jsonl, its run folder or a folder of runs")
    runs = [path.parent] if path.is_file() else find_lab_runs(path)
    if not runs:
        raise EtprInputError(f"{path}: no lab run (no events.jsonl) found")
    if options.job_id is not None and len(runs) > 1:
        raise EtprInputError(f"{path}: --job-id names one job, but this folder holds {len(runs)} lab runs "
                             "(each run is its own job, named after its folder)")
    rows: list[dict[str, Any]] = []
    for r in runs:
        rows += load_lab_run(r, issues, use_truth=options.use_truth, job=options.job_id)
    return rows_to_frame(rows)
