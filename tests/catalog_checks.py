"""The one check the catalogue's per-message tests share: a log ending in a known message is decided by it."""

from __future__ import annotations

from diag_service.domain import Category, Diagnosis
from diag_service.kb.text import analyze_text


def assert_signature_decides(text: str, signature_id: str, category: Category) -> Diagnosis:
    """Diagnose ``text`` (the pipeline's one chain, no knowledge base or model) and assert that
    ``signature_id`` is among the hits and the diagnosis has ``category``. Returns the diagnosis."""
    d = analyze_text(text)
    hits = [h.signature_id for h in d.signature_hits]
    assert signature_id in hits, hits
    assert d.category is category, (d.category, hits)
    return d
