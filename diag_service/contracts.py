"""The optional parts of a diagnosis, as objects the caller passes in (``DiagnoseRequest(retriever=...,
summarizer=...)``), not flags that reach a process-wide default.

* :class:`Retriever`: similar past incidents for a diagnosis (the knowledge base,
  :class:`diag_service.kb.KnowledgeBase` or :class:`diag_service.kb.DefaultRetriever`).
* :class:`Summarizer`: a cited narrative for a diagnosis (:class:`diag_service.llm.LocalSummarizer`),
  returning a :class:`SummaryOutcome`.

Interfaces (CLI, service, bot, labelling) build these once from their settings and pass them with each
request. The pipeline calls them and never raises because of them: a failure becomes a warning.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from diag_service.domain import Diagnosis, Narrative, SimilarIncident


@runtime_checkable
class Retriever(Protocol):
    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        """The ``k`` most similar stored incidents, best first, and whether ``diagnosis`` looks novel.
        May raise any :class:`~diag_service.errors.DiagError` (the pipeline reports it as a warning)."""
        ...


class SummaryOutcome(Protocol):
    """What a summarizer did: the ``narrative``, and why it fell back to the deterministic summary
    (``fallback_reason``, None when the model wrote it)."""

    narrative: Narrative
    fallback_reason: str | None


@runtime_checkable
class Summarizer(Protocol):
    def summarize(self, diagnosis: Diagnosis) -> SummaryOutcome:
        """A narrative of ``diagnosis`` (never raises for a model problem: it falls back)."""
        ...


__all__ = ["Retriever", "Summarizer", "SummaryOutcome"]
