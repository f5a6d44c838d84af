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

from diag_service.slow.analyze import analyze_bundle, analyze_slow, etpr_events, load_feed
from diag_service.slow.detector import SlowDetector
from diag_service.slow.feeds import Feed, FeedError, StepBatch
from diag_service.slow.models import (
    BaselineInfo,
    FeedStats,
    GroupFinding,
    SlowAlarm,
    SlowConfig,
    SlowEpisode,
    SlowReport,
    StepEvidence,
    StepKind,
    Straggler,
    StragglerKind,
)

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
