"""ETPR accounting (Effective Training Productivity Ratio) per job and per cluster.

``load_events`` reads and validates lifecycle events from any supported source, ``compute_ledger``
splits every job's allocated GPU time into buckets (the core), ``build_report`` aggregates them into an
:class:`EtprReport`, and ``render_html`` / ``render_text`` show it. Definitions: ``docs/etpr.md``.
"""

from diag_service.etpr.accounting import Ledger, compute_ledger
from diag_service.etpr.loaders import EtprInputError, load_events, normalize_events
from diag_service.etpr.report import build_report, render_html, render_text
from diag_service.etpr.schema import Bucket, EtprEvent, EtprReport, EventType, Issue, Phase, Term

__all__ = [
    "Bucket",
    "EtprEvent",
    "EtprInputError",
    "EtprReport",
    "EventType",
    "Issue",
    "Ledger",
    "Phase",
    "Term",
    "build_report",
    "compute_ledger",
    "load_events",
    "normalize_events",
    "render_html",
    "render_text",
]
