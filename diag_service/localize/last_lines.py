"""What a rank was doing when it went quiet (its last lines, told beside a verdict that names it without its own
error), and where the rank named first ran (:func:`set_first_failing_node`).

A hang's culprit and a rank killed without a traceback write no error of their own; their last ordinary lines
("saving checkpoint 3", "waiting for feature-store snapshot ...", "loading shard 7") are often the most direct clue
an on-call engineer has. Entry point: :func:`combine_last_lines` (a diagnosis and the extractor's observations in, the
diagnosis's findings extended in place).
"""

from __future__ import annotations

import re
from collections import Counter

from diag_service.contracts import ProgressLog
from diag_service.domain import LOOPBACK, Diagnosis, EventKind, FailureMode
from diag_service.logformat import iso
from diag_service.redact import redact

#: Lines told (the rank's last ones, oldest first), of the extractor's ``LAST_LINES`` kept per rank.
SHOWN_LINES = 2
#: Characters told of each line.
SHOWN_CHARS = 200
_OWN_ERROR = frozenset({EventKind.TRACEBACK, EventKind.EXCEPTION, EventKind.CPP_FRAMES})


def _own_error(d: Diagnosis, rank: int) -> bool:
    """The rank wrote an error of its own (a traceback, an exception line, C++ frames): that says what it did."""
    return any(e.kind in _OWN_ERROR and rank in e.ranks for e in d.events)


def _quoted(text: str) -> str:
    """A log line as a finding quotes it: redacted, cut at :data:`SHOWN_CHARS`, in double quotes."""
    text = redact(text)
    return '"' + (text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "...") + '"'


def combine_last_lines(d: Diagnosis, progress: ProgressLog) -> None:
    """Append to ``d.findings`` the last :data:`SHOWN_LINES` ordinary lines (redacted) of the rank ``d`` names as
    first failing (``progress.last_lines``), with file, line and time, when that rank is a hang's culprit or a stopped
    job's failing rank that wrote no error of its own. Nothing when no rank is named, or its lines are not known."""
    rank = d.first_failing_rank
    if rank is None and d.failure_mode is FailureMode.FAIL_HANG:
        _differing_last_lines(d, progress)
        return
    if rank is None or d.failure_mode not in (FailureMode.FAIL_HANG, FailureMode.FAIL_STOP):
        return
    lines = progress.last_lines.get(rank)
    if not lines or (d.failure_mode is FailureMode.FAIL_STOP and _own_error(d, rank)):
        return
    told = []
    for path, line_no, ts, text in lines[-SHOWN_LINES:]:
        when = f", {iso(ts)}" if ts is not None else ""
        told.append(f"{path.rsplit('/', 1)[-1]}:{line_no}{when}: {_quoted(text)}")
    what = "before the job hung" if d.failure_mode is FailureMode.FAIL_HANG else "before it stopped"
    d.findings.append(f"Rank {rank}'s last lines of its own {what} (what it was doing): " + "; ".join(told) + ".")


#: At most this many ranks' last lines are compared and told when a hang names no rank.
COMPARED_RANKS = 8
_DIGITS = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _differing_last_lines(d: Diagnosis, progress: ProgressLog) -> None:
    """A hang that names no rank, in a job of 2 to :data:`COMPARED_RANKS` ranks whose last lines are known: when the
    ranks' last lines differ in more than their numbers (one rank said "early stopping at step 150", the other
    "step 150 loss 0.41"), each rank's last line is told, the odd ones first: which rank left the common path is often
    what it said last."""
    last = {r: ls[-1] for r, ls in progress.last_lines.items() if ls}
    if not 2 <= len(last) <= COMPARED_RANKS:
        return
    shapes = {r: _DIGITS.sub("N", text) for r, (_p, _n, _ts, text) in last.items()}
    counts = Counter(shapes.values())
    if len(counts) < 2:
        return
    told = []
    for r in sorted(last, key=lambda r: (counts[shapes[r]], r)):
        path, line_no, _ts, text = last[r]
        told.append(f"rank {r} ({path.rsplit('/', 1)[-1]}:{line_no}): {_quoted(text)}")
    d.findings.append("The ranks' last lines differ (which rank left the common path is often what it said last): "
                      + "; ".join(told) + ".")


def set_first_failing_node(d: Diagnosis, placed: tuple[int | None, str | None] = (None, None)) -> None:
    """Set ``d.first_failing_node``: the node of ``d.first_failing_rank``'s own evidence line, else of the straggler
    report naming it, else the one faulty node, else ``placed``'s node when ``placed`` names the same rank (the
    localizer's :attr:`~diag_service.contracts.Localization.first_failing_node`: a hang's silent rank has no evidence
    line of its own; a new user's trial 41, r02: "Rank 2 runs on node node1" in the findings, the field null); None
    when no rank is named (a node the evidence names for several ranks alike is no one rank's)."""
    rank = d.first_failing_rank
    node = None
    if rank is not None:
        node = next((e.node for e in d.root_cause.evidence if e.rank == rank and e.node), None)
        if node is None and d.slow is not None:
            node = next((s.node for s in d.slow.stragglers if s.rank == rank and s.node), None)
        if node is None and len(d.faulty_nodes) == 1:
            node = d.faulty_nodes[0]
        if node is None and placed[0] == rank:
            node = placed[1]
    # a launcher table's "host : localhost" names no node
    d.first_failing_node = node if node is None or not LOOPBACK.match(node) else None
