"""Stage 1, ingest: open a job's log bundle and stream it as blocks of normalised text lines.

Entry point: :func:`read_bundle` (``IngestRequest`` in, iterator of :class:`Block` out, with every
problem recorded in an :class:`~diag_service.domain.InputReport`).
"""

from diag_service.ingest.archive import archive_member_text
from diag_service.ingest.bundle import Block, BundleError, IngestLimits, Source, read_bundle

__all__ = ["Block", "BundleError", "IngestLimits", "Source", "archive_member_text", "read_bundle"]
