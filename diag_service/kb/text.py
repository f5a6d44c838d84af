"""What the knowledge base embeds: the deduplicated, masked root-cause events of a diagnosis.

:func:`diagnosis_text` turns a :class:`~diag_service.domain.Diagnosis` into one short text: the
names of the signatures that matched its root events (with the decisive details such as the Xid
code), then the Drain3 templates of those events, and of the one most suspicious supporting event
(:data:`SUPPORT_MIN_SUSPICION`), with the mask placeholders (``<NUM>``, ``<IP>``, …) and bare
punctuation removed. Raw log text (ranks, hosts, addresses, timestamps) never reaches the
model, so two incidents of the same kind on different nodes embed alike.

Records are embedded the same way: their evidence lines are run through the diagnosis stages
(:func:`analyze_text`) and the resulting diagnosis is turned into text, so queries and records live
in one space. The stages are composed here (ingest → extract → redact → templates → signatures →
localize) rather than through :func:`diag_service.pipeline.diagnose`, which calls the knowledge base
itself and runs the recovery policy.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from diag_service.domain import Diagnosis, EventRole, EventTemplate, SignatureHit
from diag_service.errors import ErrorKind
from diag_service.kb.records import KBError

if TYPE_CHECKING:
    from diag_service.ingest.open import Bundle

#: At most this many events make up one text (the model reads 256 tokens at most).
MAX_EVENTS = 4
MAX_TEXT_CHARS = 1200
#: Besides the root events, the most suspicious context event (a warning the localizer scored; never
#: another rank's symptom or a launcher summary, which would pull in incidents of the cascade, e.g. a gloo
#: "connection closed by peer" beside a shape mismatch) at least this suspicious: the line that says
#: *why* often sits next to the one that failed
#: (``NCCL WARN Bootstrap : no socket interface found`` before NCCL's generic "internal error"). Measured
#: in ``eval/kb_eval.py`` (docs/kb.md): leave-one-out recall@5 of the category 0.896 → 0.914 with the
#: default embedder, recall@1 0.742 (dev 0.875); letting symptoms support too gave 0.920 but recall@1 0.730 (dev 0.813).
SUPPORT_MIN_SUSPICION = 0.5
#: Bump when what :func:`diagnosis_text` produces changes: the default store then re-embeds its seeds.
TEXT_VERSION = "2"
SUPPORT_EVENTS = 1
#: Signature details worth keeping in the text (an Xid code or an IB status changes the meaning).
DETAIL_KEYS = ("code", "status", "sig", "exc")

_MASK = re.compile(r"<(?:[A-Z]+|\*)>")
#: Module path in front of an exception class (``torch.distributed.DistNetworkError`` → ``DistNetworkError``).
_DOTTED_EXC = re.compile(r"\b(?:[a-z_]\w*\.)+(?=[A-Za-z_]\w*(?:Error|Exception|Warning)\b)")
#: glog source prefix (``[E ProcessGroupNCCL.cpp:1537]``) once the line number is masked.
_GLOG = re.compile(r"\[[EWIF] [\w./-]+\.(?:cpp|cc|c|h|py):?\s*(?:<NUM>\]?)?\s*")
_PUNCT_ONLY = re.compile(r"(?<!\S)[^\w\s]+(?!\S)")
_SPACES = re.compile(r"\s+")
_MASK_ONLY = re.compile(r"^(?:\s|<(?:[A-Z]+|\*)>|[^\w])*$")


class TextError(KBError):
    """A text or bundle could not be turned into events (unreadable, empty)."""

    kind = ErrorKind.INPUT


def clean_template(template: str) -> str:
    """Drop mask placeholders, glog source prefixes, module paths of exception classes and
    punctuation-only tokens from a Drain3 template; collapse spaces. These carry no cause, and a
    general-purpose sentence model otherwise matches on them (measured in ``eval/kb_eval.py``).
    """
    s = _GLOG.sub(" ", template)
    s = _DOTTED_EXC.sub("", s)
    s = _MASK.sub(" ", s)
    s = _PUNCT_ONLY.sub(" ", s)
    return _SPACES.sub(" ", s).strip()


def _chosen_events(d: Diagnosis) -> list[EventTemplate]:
    """Root events, then the most suspicious other event if it scores at least :data:`SUPPORT_MIN_SUSPICION`;
    failing root events the symptoms; failing those the most suspicious events.
    """
    usable = [e for e in d.events if not _MASK_ONLY.match(e.template)]
    for roles in ((EventRole.ROOT,), (EventRole.SYMPTOM,), (EventRole.CONTEXT, EventRole.SUMMARY)):
        evs = sorted((e for e in usable if e.role in roles), key=lambda e: -e.suspicion)
        if evs:
            if roles == (EventRole.ROOT,):
                support = sorted((e for e in usable if e.role not in (EventRole.ROOT, EventRole.SYMPTOM, EventRole.SUMMARY)
                                  and e.suspicion >= SUPPORT_MIN_SUSPICION),
                                 key=lambda e: -e.suspicion)
                evs += support[:SUPPORT_EVENTS]
            return evs
    return []


def _hit_label(h: SignatureHit) -> str:
    details = [f"{k} {h.details[k]}" for k in DETAIL_KEYS if h.details.get(k)]
    return h.name + (f" ({', '.join(details)})" if details else "")


def diagnosis_text(d: Diagnosis) -> str:
    """The text that represents ``d`` in the knowledge base; ``""`` when ``d`` has no events.

    Shape: ``"<signature name (details)>; …. <cleaned template> | <cleaned template> …"``, at most
    :data:`MAX_EVENTS` distinct templates and :data:`MAX_TEXT_CHARS` characters.
    """
    events = _chosen_events(d)
    templates: list[str] = []
    labels: list[str] = []
    for e in events:
        t = clean_template(e.template)
        if t and t not in templates and len(templates) < MAX_EVENTS:
            templates.append(t)
            for h in d.signature_hits:
                if h.signature_id in e.signature_ids and e.template_id in h.template_ids:
                    label = _hit_label(h)
                    if label not in labels:
                        labels.append(label)
    if not templates:
        return ""
    head = "; ".join(labels)
    text = (head + ". " if head else "") + " | ".join(templates)
    return text[:MAX_TEXT_CHARS]


def analyze_bundle(path: str | Path, signatures_dir: str | None = None, *, bundle: Bundle | None = None) -> Diagnosis:
    """The diagnosis stages of :func:`diag_service.pipeline.diagnose` (no retrieval, recovery, summary or
    calibration) over a log file, folder or archive, or over ``bundle`` when given.

    Raises :class:`TextError` when the bundle cannot be read or holds no log lines.
    """
    from diag_service.ingest import BundleError
    from diag_service.pipeline import DiagnoseRequest, diagnose

    try:
        d = diagnose(DiagnoseRequest(path=str(path), signatures_dir=signatures_dir, recovery=False, kb=False,
                                     llm=False, calibration=None, bundle=bundle))
    except BundleError as exc:
        raise TextError(str(exc)) from exc
    d.job_id = Path(str(path)).name
    return d


def analyze_text(text: str, signatures_dir: str | None = None) -> Diagnosis:
    """:func:`analyze_bundle` over ``text`` taken as one log file (evidence lines, a pasted log).

    Raises :class:`TextError` when ``text`` is empty.
    """
    return analyze_texts([text], signatures_dir)[0]


def analyze_texts(texts: list[str], signatures_dir: str | None = None) -> list[Diagnosis]:
    """:func:`analyze_text` of each text (in memory, :meth:`~diag_service.ingest.open.Bundle.from_text`).
    Raises :class:`TextError` on an empty text."""
    from diag_service.ingest.open import Bundle

    out: list[Diagnosis] = []
    for i, text in enumerate(texts):
        if not text or not text.strip():
            raise TextError("empty text: nothing to analyse")
        name = f"evidence-{i}.log"
        out.append(analyze_bundle(name, signatures_dir, bundle=Bundle.from_text(text, name=name)))
    return out


def _masked_lines(text: str) -> str:
    from diag_service.templates import MASKS

    masked_lines = []
    for line in text.splitlines()[:MAX_EVENTS]:
        s = line
        for pattern, name in MASKS:
            s = re.sub(pattern, f"<{name}>", s)
        s = clean_template(s)
        if s:
            masked_lines.append(s)
    return " | ".join(masked_lines)[:MAX_TEXT_CHARS]


def texts_for_logs(texts: list[str], signatures_dir: str | None = None) -> list[str]:
    """The embedded text of each free log text: :func:`diagnosis_text` of its analysis.

    When no event is found in a text (no error-like word in it), its lines themselves are masked
    with the Drain3 masks and cleaned, so a search still has something to compare. Raises
    :class:`TextError` on an empty text.
    """
    return [diagnosis_text(d) or _masked_lines(t) for t, d in zip(texts, analyze_texts(texts, signatures_dir), strict=True)]


def text_for_log(text: str, signatures_dir: str | None = None) -> str:
    """:func:`texts_for_logs` of one text."""
    return texts_for_logs([text], signatures_dir)[0]
