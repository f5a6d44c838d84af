"""The ``live`` source: a live job's folder of ``diag serve`` (``<data_dir>/live/<job>/``, written by
:mod:`diag_service.live.jobs`), or its ``events.jsonl``. The agents' lifecycle events (``started``,
``first_step``, ``progress``, ``checkpoint_saved``, ``failure``, ``hang_detected``, ``restart``, ``finished``)
and the service's own (``slow_detected``, ``diagnosed``) are already in the ETPR vocabulary; what this source
adds is the merge of several nodes' agents into one job, and the GPU count and throughput:

* ``started``: the first one (the job started when its first node did); the other agents' are dropped.
* ``failure`` / ``hang_detected``: the first of an incident (until the next ``restart``); the same fault
  reported by other nodes' agents is dropped. A ``failure`` after the incident's ``hang_detected`` (the hung
  job was killed) is dropped too: the incident's detection time is the hang's.
* ``restart``, ``first_step``, ``checkpoint_saved``: one per attempt (the agents' ``cause``), per attempt, and
  per step respectively.
* ``finished``: one, once every agent that wrote an event has sent its own, at the last one's time, with
  status ``failed`` if any agent's was not a success; until then the job is running and the ledger ends at its
  last event (the ledger *so far*). With an incident open, that is the job's latest event even when it was one
  of the rows dropped above (a later report of the incident, an ended agent's ``finished``): a report of the
  incident at that time is added (assumption ``live_ledger_to_latest_event``), so a hung job whose agent was
  killed with it (no ``finished`` ever) is allocated until the service last heard of it.
* ``progress``: from the job's step records (``timing.jsonl``, the lab's per-rank format: one sample every
  :data:`~diag_service.etpr.sources.lab.LAB_PROGRESS_EVERY` steps with its throughput, as the ``lab`` source
  does); the agents' own ``progress`` events (a step number, no throughput) only when there are none.
* ``gpus``: the number of ranks the agents reported (``.live-state.json``), on the first event.

Unproductive time from detection and diagnosis delays comes from the events themselves: a ``failure`` or
``hang_detected`` carries its ``onset_time`` (the fault's start, or the last step), and the service's
``diagnosed`` event is written when the first diagnosis after it was done.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from diag_service.etpr.accounting import OK_STATUSES
from diag_service.etpr.schema import Issue
from diag_service.etpr.sources import register_source
from diag_service.etpr.sources.base import EtprInputError, LoadOptions, add_issue, read_json_lines, rows_to_frame
from diag_service.etpr.sources.lab import timing_progress
from diag_service.fsutil import read_regular

#: The live job's state file (diag_service.live.jobs.STATE_FILE); its presence marks a live job folder.
STATE_FILE = ".live-state.json"
#: Largest state file read (a job of thousands of agents and files is a few megabytes).
MAX_STATE_BYTES = 64 << 20


def _time(row: dict[str, Any]) -> float:
    try:
        t = float(row.get("time"))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.inf
    return t if math.isfinite(t) else math.inf


def merge_agents(rows: list[dict[str, Any]], issues: list[Issue]) -> list[dict[str, Any]]:
    """One job's event rows from the rows of all its agents (the module docstring's rules), in time order.
    Rows keep their fields; ``agent`` and ``source_node`` tell whose they were. Dropped duplicates are counted
    as an assumption ``live_agents_merged``."""
    rows = sorted(rows, key=_time)
    agents = {r.get("agent") for r in rows if r.get("agent") is not None}
    out: list[dict[str, Any]] = []
    started = False
    incident: str | None = None  # the kind of the open incident's first detection
    attempt_first_step = False
    seen_restarts: set[str] = set()
    saved_steps: set[Any] = set()
    finished: dict[Any, dict[str, Any]] = {}
    has_feed_progress = any(r.get("event") == "progress" and r.get("throughput") is not None for r in rows)
    dropped = 0
    for r in rows:
        ev = r.get("event")
        keep = True
        if ev == "started":
            keep, started = not started, True
        elif ev in ("failure", "hang_detected"):
            keep = incident is None
            incident = incident or ev
        elif ev == "restart":
            cause = str(r.get("cause") or r.get("time"))
            keep = cause not in seen_restarts
            seen_restarts.add(cause)
            if keep:
                incident, attempt_first_step = None, False
        elif ev == "first_step":
            keep, attempt_first_step = not attempt_first_step, True
        elif ev == "checkpoint_saved":
            keep = r.get("step") is None or r.get("step") not in saved_steps
            saved_steps.add(r.get("step"))
        elif ev == "progress" and r.get("throughput") is None:
            keep = not has_feed_progress
        elif ev == "finished":
            finished[r.get("agent")] = r
            keep = False
            continue
        if keep:
            out.append(r)
        else:
            dropped += 1
    ended = bool(finished) and (not agents or set(finished) >= agents)
    if ended:
        last = max(finished.values(), key=_time)
        ok = all(str(f.get("status") or "").lower() in OK_STATUSES for f in finished.values())
        out.append({**last, "status": "succeeded" if ok else "failed"})
        dropped += len(finished) - 1
    elif finished:
        dropped += len(finished)
    latest = max((_time(r) for r in rows if _time(r) != math.inf), default=None)
    if not ended and incident is not None and out and latest is not None and latest > _time(out[-1]):
        # the incident's later reports and the held finishes were dropped, but the job was still allocated then:
        # the ledger so far runs to the job's latest event, in the incident (a report of it changes nothing else)
        out.append({"job": out[-1].get("job"), "event": incident, "time": latest})
        add_issue(issues, "assumption", "live_ledger_to_latest_event",
                  "live job with an open incident and an agent that has not ended: its ledger so far runs to the "
                  "job's latest event (the incident's later reports and the ended agents' finishes are not "
                  "otherwise in it)", 1, [out[-1].get("job")])
    add_issue(issues, "assumption", "live_agents_merged",
              "live job: events of several agents merged into one job (first start, first detection of each "
              "incident, one restart per attempt, one finish once every agent ended); duplicates dropped",
              dropped)
    return out


def _ranks(folder: Path, issues: list[Issue]) -> int | None:
    """How many ranks the agents reported (the state's rank map), None when unknown."""
    try:
        state = json.loads(read_regular(folder / STATE_FILE, MAX_STATE_BYTES, folder))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        add_issue(issues, "warning", "bad_live_state", f"{folder / STATE_FILE}: not readable ({exc}); GPU count unknown",
                  1)
        return None
    ranks = state.get("ranks") if isinstance(state, dict) else None
    return len(ranks) if isinstance(ranks, dict) and ranks else None


def load_live_job(folder: Path, issues: list[Issue], job: str | None = None) -> list[dict[str, Any]]:
    """The merged event rows of the live job in ``folder`` (:func:`merge_agents`), with the step records'
    progress samples and the GPU count. ``job``: the job id of every row (default: the rows' own ``job``,
    else the folder's name)."""
    rows = read_json_lines(folder / "events.jsonl", issues)
    name = job or next((str(r["job"]) for r in rows if r.get("job")), folder.name)
    rows = [{**{k: v for k, v in r.items() if not isinstance(v, dict | list)}, "job": name} for r in rows]
    rows += timing_progress(read_json_lines(folder / "timing.jsonl", issues), name)
    rows = merge_agents(rows, issues)
    gpus = _ranks(folder, issues)
    if gpus is not None and rows:
        rows[0]["gpus"] = gpus
    return rows


def is_live_folder(path: Path) -> bool:
    """True for a live job's folder (it holds ``.live-state.json``) or its ``events.jsonl``."""
    if path.is_dir():
        return (path / STATE_FILE).is_file()
    return path.name == "events.jsonl" and (path.parent / STATE_FILE).is_file()


@register_source("live", detect=is_live_folder, priority=5,
                 description="a live job's folder of diag serve (<data_dir>/live/<job>) or its events.jsonl")
def load_live(path: Path, issues: list[Issue], options: LoadOptions) -> pl.DataFrame:
    """Raw rows of the live job at ``path`` (:func:`load_live_job`). Raises :class:`EtprInputError` when
    ``path`` is neither a live job's folder nor its ``events.jsonl``."""
    folder = path.parent if path.is_file() else path
    if not is_live_folder(path):
        raise EtprInputError(f"{path}: not a live job's folder (no {STATE_FILE}) or its events.jsonl")
    return rows_to_frame(load_live_job(folder, issues, job=options.job_id))


__all__ = ["STATE_FILE", "is_live_folder", "load_live", "load_live_job", "merge_agents"]
