"""Incident knowledge base: past incidents retrieved by embedding similarity (sentence-transformers + FAISS).

Entry points: :func:`similar_incidents` (a :class:`~diag_service.domain.Diagnosis` in, the most
similar stored incidents and a novelty flag out) and :class:`KnowledgeBase` (build from
``knowledge_base/incidents/*.yaml``, search, operator feedback). The CLI is :mod:`diag_service.kb.cli`
(``diag kb``). See ``docs/kb.md``.
"""

from diag_service.kb.embed import Embedder, EmbedderError, HashingEmbedder, HybridEmbedder, MiniLMEmbedder, default_embedder
from diag_service.kb.index import IndexCorrupt, IndexParams
from diag_service.kb.kb import (
    DEFAULT_NOVELTY_THRESHOLD,
    AddResult,
    BuildReport,
    Calibration,
    DefaultRetriever,
    KBConfig,
    KBInfo,
    KBLocked,
    KnowledgeBase,
    SearchHit,
    SearchResult,
    calibrate,
    default_home,
    default_kb,
    open_kb,
    similar_incidents,
    to_similar,
    vote_category,
)
from diag_service.kb.records import IncidentRecord, KBError, RecordError, Recovery, SeedIncident, load_records
from diag_service.kb.store import ModelMismatch, StoreError
from diag_service.kb.text import TextError, analyze_bundle, analyze_text, diagnosis_text, text_for_log

__all__ = [
    "DEFAULT_NOVELTY_THRESHOLD",
    "AddResult",
    "BuildReport",
    "Calibration",
    "Embedder",
    "EmbedderError",
    "HashingEmbedder",
    "HybridEmbedder",
    "IncidentRecord",
    "IndexCorrupt",
    "IndexParams",
    "KBConfig",
    "KBError",
    "KBInfo",
    "KBLocked",
    "KnowledgeBase",
    "MiniLMEmbedder",
    "ModelMismatch",
    "RecordError",
    "Recovery",
    "SearchHit",
    "SearchResult",
    "SeedIncident",
    "StoreError",
    "TextError",
    "analyze_bundle",
    "analyze_text",
    "calibrate",
    "default_embedder",
    "default_home",
    "DefaultRetriever",
    "default_kb",
    "open_kb",
    "diagnosis_text",
    "load_records",
    "similar_incidents",
    "text_for_log",
    "to_similar",
    "vote_category",
]
