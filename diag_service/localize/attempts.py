"""The job's restarts as its logs hold them: torchelastic's ``--log-dir`` keeps each attempt of the worker group
in its own ``attempt_N`` folder (``<log_dir>/<run_id>/attempt_<N>/<local_rank>/{stdout,stderr}.log``, torch
``torch.distributed.elastic.multiprocessing.api``), so a bundle of that folder shows how many times the launcher
restarted the job and how far each attempt trained.

One entry point, :func:`restarts_from_logs`: the extractor's observations in, a
:class:`~diag_service.domain.JobRestarts` (``source="logs"``) out, or None when the logs show a single attempt.
A live job's restarts (the agents' events) are counted by the live registry instead.
"""

from __future__ import annotations

import re

from diag_service.contracts import ProgressLog
from diag_service.domain import JobRestarts

#: torchelastic's attempt folder in a file's bundle path
ATTEMPT_DIR = re.compile(r"(?:^|/)attempt_(\d{1,4})/")


def attempt_of(path: str) -> int | None:
    """The torchelastic attempt number of a bundle path (``.../attempt_N/...``), None outside an attempt folder."""
    m = ATTEMPT_DIR.search(path)
    return int(m.group(1)) if m else None


def restarts_from_logs(progress: ProgressLog, members: list[str] | tuple[str, ...] = ()) -> JobRestarts | None:
    """The launcher's restarts shown by ``attempt_N`` folders: ``count`` the highest attempt number seen (attempt 0
    is the first start), ``without_progress`` the latest attempts in a row whose training step reached (the last step
    of each of its files, ``progress.file_last_step``) is no higher than every earlier attempt's (an attempt
    with no step line counts as none), ``first_time``/``last_time`` the earliest step time (unix seconds) of the
    first and of the last of those attempts when their lines have times, ``highest_step`` the highest step reached by
    any attempt. None when no file lies in an attempt folder above 0.

    The attempt numbers come from ``members`` (the bundle paths of the log files read, ingest's
    ``Bundle.log_members``: every file the events and step lines were read from) and from the step lines' files."""
    steps: dict[int, list[tuple[float | None, int]]] = {}  # per attempt: each file's first step time and last step
    firsts: dict[str, float] = {}
    for (path, _rank, _node), points in progress.series.items():
        if points and attempt_of(path) is not None:
            firsts[path] = min(points[0][0], firsts.get(path, points[0][0]))
    for path, last in progress.file_last_step.items():
        a = attempt_of(path)
        if a is not None:
            # a file's last step is how far it got (its first may be a configuration banner's "steps=60")
            steps.setdefault(a, []).append((firsts.get(path), last))
    seen = set(steps) | {a for p in members if (a := attempt_of(p)) is not None}
    if not seen or max(seen) == 0:
        return None
    last = max(seen)
    best: int | None = None
    streak: list[int] = []
    for a in range(last + 1):
        top = max((s for _t, s in steps.get(a, ())), default=None)
        if a > 0:
            if top is None or (best is not None and top <= best):
                streak.append(a)
            else:
                streak = []
        if top is not None:
            best = top if best is None else max(best, top)

    def start(a: int) -> float | None:
        return min((t for t, _s in steps.get(a, ()) if t is not None), default=None)

    return JobRestarts(
        count=last, without_progress=len(streak),
        first_time=start(streak[0]) if streak else None, last_time=start(streak[-1]) if streak else None,
        highest_step=best, source="logs",
    )


__all__ = ["ATTEMPT_DIR", "restarts_from_logs"]
