"""The diagnosis pipeline: composes the stages; the only entry point the interfaces call.

Entry point: :func:`diagnose` (:class:`DiagnoseRequest` in, :class:`~diag_service.domain.Diagnosis`
out; raises :class:`~diag_service.ingest.BundleError`).
"""

from diag_service.pipeline.run import DiagnoseRequest, diagnose

__all__ = ["DiagnoseRequest", "diagnose"]
