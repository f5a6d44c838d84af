"""Knowledge-base retrieval folded into a diagnosis: signatures decide, retrieval fills gaps only."""

from __future__ import annotations

from diag_service.domain import (
    Category,
    Diagnosis,
    EventRole,
    FailureMode,
    InputReport,
    Responsible,
    RootCause,
    SignatureHit,
    SimilarIncident,
)
from diag_service.localize import combine_retrieval


def _diag(category: Category, hits: list[SignatureHit] | None = None) -> Diagnosis:
    return Diagnosis(
        failure_mode=FailureMode.FAIL_STOP, category=category, responsible=Responsible.PLATFORM, confidence=0.2,
        root_cause=RootCause(summary="x"), signature_hits=hits or [], input=InputReport(path="x"),
    )


INC = SimilarIncident(incident_id="gpu-xid79", title="GPU fell off the bus", score=0.91, category=Category.GPU_HARDWARE,
                      root_cause="Xid 79", action="cordon the node", recovery_level="L3")


def test_retrieval_fills_an_unknown_category() -> None:
    d = _diag(Category.UNKNOWN)
    combine_retrieval(d, [INC], novel=False)
    assert d.category is Category.GPU_HARDWARE and d.category_source == "retrieval"
    assert d.confidence <= 0.6 and d.similar_incidents[0].recovery_level == "L3"


def test_retrieval_never_overrules_signatures() -> None:
    d = _diag(Category.GPU_OOM)
    combine_retrieval(d, [INC], novel=False)
    assert d.category is Category.GPU_OOM and d.category_source == "signatures"
    weak = SignatureHit(signature_id="connection_reset", name="reset", failure_mode=FailureMode.FAIL_STOP,
                        category=Category.NETWORK, role=EventRole.ROOT, priority=15, confidence=0.35, explanation="x")
    d = _diag(Category.UNKNOWN, [weak])
    combine_retrieval(d, [INC], novel=False)
    assert d.category is Category.UNKNOWN


def test_novel_or_weak_matches_do_not_decide() -> None:
    d = _diag(Category.UNKNOWN)
    combine_retrieval(d, [INC], novel=True)
    assert d.category is Category.UNKNOWN and d.novel is True
    d = _diag(Category.UNKNOWN)
    combine_retrieval(d, [INC.model_copy(update={"score": 0.5})], novel=False)
    assert d.category is Category.UNKNOWN


def test_a_hang_known_only_from_timeouts_is_not_named_by_retrieval() -> None:
    """Watchdog timeouts read alike whatever kept the peer away: a similar past hang says nothing of this one's cause."""
    timeout = SignatureHit(signature_id="nccl_watchdog_timeout", name="watchdog", failure_mode=FailureMode.FAIL_HANG,
                           category=Category.UNKNOWN, role=EventRole.SYMPTOM, priority=10, confidence=0.3,
                           explanation="x")
    hang = SimilarIncident(incident_id="collective-hang-different-ops", title="ranks in different collectives",
                           score=0.9, category=Category.USER_CODE, root_cause="r", action="a")
    d = _diag(Category.UNKNOWN, [timeout])
    combine_retrieval(d, [hang], novel=False)
    assert d.category is Category.UNKNOWN and d.category_source == "signatures"
    assert d.similar_incidents == [hang]  # still listed for the reader
