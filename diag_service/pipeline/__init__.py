"""The diagnosis pipeline: composes the stages; the only entry point the interfaces call.

Entry point: :func:`diagnose` (:class:`DiagnoseRequest` in, :class:`~diag_service.domain.Diagnosis`
out; raises :class:`~diag_service.ingest.BundleError`); :func:`hang_with_logs` for stack dumps read beside the logs.
"""

from diag_service.pipeline.hang import hang_with_logs
from diag_service.pipeline.run import DiagnoseRequest, diagnose

__all__ = ["DiagnoseRequest", "diagnose", "hang_with_logs"]
