"""Stage 3, extract: find candidate events (error-like lines, tracebacks, NCCL/kernel lines) in blocks.

Entry point: :func:`extract_events` (blocks in, :class:`RawEvent` out) plus the progress series
collected on the way (:class:`ProgressLog`).
"""

from diag_service.extract.events import CollectiveTimeout, ProgressLog, RawEvent, extract_events

__all__ = ["CollectiveTimeout", "ProgressLog", "RawEvent", "extract_events"]
