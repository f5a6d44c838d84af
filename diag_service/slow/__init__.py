"""Fail-slow detection and straggler localisation (``diag slow``), batch and streaming.

Public API:

* :func:`analyze_slow` -- the one batch entry point: a timing feed (JSONL/CSV/Parquet), a log bundle
  with iteration lines, a public trace, or records -> :class:`SlowReport`;
* :class:`SlowDetector` -- the streaming detector: ``update(step_records)`` per step, ``report()``;
* :func:`load_feed` -- the loaders behind ``analyze_slow``;
* :func:`analyze_bundle` -- for ``diag diagnose``: the report of a bundle with a feed or iteration lines,
  else None; :func:`etpr_events` -- the episodes as ETPR ``slow_detected``/``slow_resolved`` events;
* :class:`SlowConfig` and the report models.

Method and limits: ``docs/slow.md``.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    **dict.fromkeys(("analyze_bundle", "analyze_slow", "etpr_events", "load_feed"), "diag_service.slow.analyze"),
    "SlowDetector": "diag_service.slow.detector",
    **dict.fromkeys(("Feed", "FeedError", "StepBatch"), "diag_service.slow.feeds"),
    **dict.fromkeys(("BaselineInfo", "FeedStats", "GroupFinding", "SlowAlarm", "SlowConfig", "SlowEpisode", "SlowReport",
                     "StepEvidence", "StepKind", "Straggler", "StragglerKind"), "diag_service.slow.models"),
}


def __getattr__(name: str) -> Any:
    # imported on first use: the report models (diag_service.slow.models) are part of the shared
    # vocabulary (Diagnosis.slow) and must not pull the detector, numpy and polars in with them
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BaselineInfo",
    "Feed",
    "FeedError",
    "FeedStats",
    "GroupFinding",
    "SlowAlarm",
    "SlowConfig",
    "SlowDetector",
    "SlowEpisode",
    "SlowReport",
    "StepBatch",
    "StepEvidence",
    "StepKind",
    "Straggler",
    "StragglerKind",
    "analyze_bundle",
    "analyze_slow",
    "etpr_events",
    "load_feed",
]
