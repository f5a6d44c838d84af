"""The ``philly`` source: a Microsoft Philly ``cluster_job_log`` (JSON list of jobs with per-attempt times)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.etpr.schema import Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, open_text, rows_to_frame


def _philly_time(v: Any) -> float | None:
    if v in (None, "None", ""):
        return None
    try:
        return datetime.strptime(str(v), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def load_philly(path: Path, issues: list[Issue]) -> list[dict[str, Any]]:
    """Rows from a Philly ``cluster_job_log`` (JSON list of jobs with ``attempts``).

    Per attempt: ``allocated``/``started``/``first_step`` at ``start_time`` (Philly has no step
    information, so productive time is assumed to start with the attempt: an upper bound on ETPR),
    ``failure`` + ``released`` at ``end_time`` for every attempt but the last, and the last ends as the
    job's status says (Pass: finished succeeded, Failed: failure + finished failed, Killed: killed).
    GPUs = number of GPUs listed in the attempt's ``detail``. Times are read as UTC.
    """
    try:
        with open_text(path) as f:
            data = json.load(f)
    except (ValueError, RecursionError, OSError) as exc:  # JSONDecodeError, a number over the digit limit
        raise EtprInputError(f"{path}: not a Philly cluster_job_log JSON ({exc})") from exc
    if not isinstance(data, list):
        raise EtprInputError(f"{path}: a Philly cluster_job_log is a JSON list of jobs")
    rows: list[dict[str, Any]] = []
    bad = []
    for j in data:
        if not isinstance(j, dict) or not j.get("jobid"):
            bad.append("?")
            continue
        job, status = str(j["jobid"]), str(j.get("status", ""))
        sub = _philly_time(j.get("submitted_time"))
        if sub is not None:
            rows.append({"job": job, "event": "submitted", "time": sub})
        attempts = [a for a in (j.get("attempts") or []) if isinstance(a, dict)]
        for i, a in enumerate(attempts):
            start, end = _philly_time(a.get("start_time")), _philly_time(a.get("end_time"))
            gpus = sum(len(d.get("gpus") or []) for d in (a.get("detail") or []) if isinstance(d, dict)) or None
            if start is None:
                bad.append(job)
                continue
            rows += [{"job": job, "event": "allocated", "time": start, "gpus": gpus},
                     {"job": job, "event": "started", "time": start},
                     {"job": job, "event": "first_step", "time": start}]
            if end is None:
                continue
            last = i == len(attempts) - 1
            if not last:
                rows += [{"job": job, "event": "failure", "time": end, "cause": "philly attempt ended"},
                         {"job": job, "event": "released", "time": end}]
            elif status == "Pass":
                rows.append({"job": job, "event": "finished", "time": end, "status": "succeeded"})
            elif status == "Killed":
                rows.append({"job": job, "event": "killed", "time": end})
            else:
                rows += [{"job": job, "event": "failure", "time": end, "cause": f"philly status {status}"},
                         {"job": job, "event": "finished", "time": end, "status": "failed"}]
    add_issue(issues, "warning", "philly_bad_record", "Philly record or attempt without jobid/start_time; skipped",
           len(bad), bad)
    add_issue(issues, "assumption", "philly_no_steps",
           "Philly traces carry no step information: productive time is assumed to start with each attempt and "
           "no checkpoint is known (so a failed attempt's whole run is lost work)", 1)
    return rows



def _detect(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and ("philly" in name or name.startswith("cluster_job_log"))


@register_source("philly", detect=_detect, priority=40,
                 description="a Microsoft Philly cluster_job_log (JSON)")
def load_philly_source(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of :func:`load_philly`."""
    return rows_to_frame(load_philly(path, issues))
