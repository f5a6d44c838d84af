"""Is a slowdown found in a run worth acting on? The verdict layer over a :class:`SlowReport`'s findings.

A detector answers "did the step time change?"; an on-call engineer also asks "did it cost enough to matter?". One
entry point, :func:`immaterial`, shared by ``diag slow`` (which heads a report of immaterial findings as minor) and the
diagnosis (where a finished run's immaterial slowdown is a finding, not its failure mode).
"""

from __future__ import annotations

from diag_service.slow.models import SlowReport

#: The share of a finished run's time its slowdown episodes must cost to be the run's verdict (fail_slow) rather than a
#: finding. This host's clean runs drift 1.1-1.3x for tens of steps (docs/slow.md, "How far step time alone can go"):
#: such an episode in a run of hundreds of steps costs 1-3 % of it; a slowdown worth a look costs more.
MATERIAL_SLOWDOWN = 0.05
#: ... unless an episode lasted at least this many steps: issue 18's sustained slowdown (a job-wide 1.2x held for 50
#: steps is to be found), whatever share of a long run it cost.
MATERIAL_EPISODE_STEPS = 50
#: ... and, whatever its share or length, a slowdown that cost the run less than this many seconds in all is a finding:
#: no recovery action (the cheapest costs minutes, ``knowledge_base/recovery_policy.yaml``) is worth it, and a real
#: training step is long enough (0.1-10 s) that issue 18's 1.2x held for 50 steps costs more. Clean controls on this
#: shared host drift by 0.10-0.94 s in 5-10 s runs; the smallest real slowdown of a finished zoo run costs 1.8 s.
MATERIAL_SLOWDOWN_S = 1.0


def run_share(slow: SlowReport, lost: float) -> float:
    """``lost`` seconds over the run's time (its steps at the report's baseline pace plus ``lost``); 1.0 when the report
    has no baseline to judge by."""
    base = slow.baseline.step_time_s if slow.baseline is not None else None
    steps = slow.input.steps if slow.input is not None else 0
    if not base or not steps:
        return 1.0
    return lost / (base * steps + lost)


def straggler_share(slow: SlowReport) -> float:
    """The costliest named straggler's own excess over the run's time (:func:`run_share`); 0.0 without a straggler
    (the costliest, not the sum: two ranks' noise is not twice a loss)."""
    if not slow.stragglers:
        return 0.0
    return run_share(slow, max(s.time_lost_s for s in slow.stragglers))


def lost_seconds(slow: SlowReport) -> float | None:
    """Seconds the report's slowdown cost the run: its episodes' lost time, or its costliest straggler's when that is
    more; None when the report's units are not seconds (a throughput-only series) or nothing was found."""
    if slow.units != "seconds" or not (slow.job_slowdown or slow.stragglers):
        return None
    return max(sum(e.time_lost_s for e in slow.job_slowdown), max((s.time_lost_s for s in slow.stragglers), default=0.0))


def lost_fraction(slow: SlowReport) -> float:
    """Time the report's episodes lost over the run's time (:func:`run_share`)."""
    return run_share(slow, sum(e.time_lost_s for e in slow.job_slowdown))


def immaterial(slow: SlowReport, *, finished: bool = True) -> str | None:
    """Why the slowdown ``slow`` found is too small to act on, as a phrase for a report ("costing about 0.08 s in all:
    too little to be the run's failure"); None when it is material or nothing was found.

    Immaterial: every node or stage blamed is a named straggler's, every episode shorter than
    :data:`MATERIAL_EPISODE_STEPS` and all of them and the costliest straggler under :data:`MATERIAL_SLOWDOWN` of the
    run's time; or, whatever its share, under :data:`MATERIAL_SLOWDOWN_S` seconds in all. ``finished=False`` (a feed
    that may still be growing): an episode still open at the feed's end, or a straggler still slow there, is material,
    since its cost is still growing.
    """
    if not (slow.job_slowdown or slow.stragglers or slow.groups):
        return None
    if not finished and (any(e.ongoing for e in slow.job_slowdown) or any(s.active for s in slow.stragglers)):
        return None
    named = {s.rank for s in slow.stragglers}  # a node of flagged ranks costs what they do (one rank per node: itself)
    share = max(lost_fraction(slow), straggler_share(slow))
    if all(g.ranks and set(g.ranks) <= named for g in slow.groups) and share < MATERIAL_SLOWDOWN \
            and all(e.steps < MATERIAL_EPISODE_STEPS for e in slow.job_slowdown):
        return f"costing about {100 * share:.1f} % of the run's time: the host's own drift, not a slowdown of the run"
    lost_s = lost_seconds(slow)
    if lost_s is not None and lost_s < MATERIAL_SLOWDOWN_S:
        return f"costing about {lost_s:.2g} s in all: too little to be the run's failure"
    return None
