"""Batch labelling of historical failures (``diag label``): one row per job, resumable, local or on Ray.

Entry point: :func:`label_archive` (:class:`LabelRequest` in, :class:`LabelResult` with a
:class:`LabelSummary` out). Every job is labelled by the shared pipeline
(:func:`diag_service.pipeline.diagnose`) inside a :class:`Labeller`; rows are :class:`LabelRow`.
The CLI command is :func:`diag_service.label.cli.label`. See ``docs/label.md``.
"""

from diag_service.label.engines import Engine, EngineError, LocalEngine, RayEngine
from diag_service.label.inputs import ArchiveError, discover_jobs
from diag_service.label.ledger import Ledger, LedgerError
from diag_service.label.models import LABEL_SCHEMA, ClusterSummary, Job, LabelOptions, LabelRow
from diag_service.label.output import SCHEMA, read_labels
from diag_service.label.run import LabelConfigError, LabelRequest, LabelResult, ProgressSink, label_archive
from diag_service.label.summary import LabelSummary, render_markdown, summarise
from diag_service.label.worker import Labeller, normalise_template, template_key

__all__ = [
    "LABEL_SCHEMA",
    "SCHEMA",
    "ArchiveError",
    "ClusterSummary",
    "Engine",
    "EngineError",
    "Job",
    "LabelConfigError",
    "LabelOptions",
    "LabelRequest",
    "LabelResult",
    "LabelRow",
    "LabelSummary",
    "Labeller",
    "Ledger",
    "LedgerError",
    "LocalEngine",
    "ProgressSink",
    "RayEngine",
    "discover_jobs",
    "label_archive",
    "normalise_template",
    "read_labels",
    "render_markdown",
    "summarise",
    "template_key",
]
