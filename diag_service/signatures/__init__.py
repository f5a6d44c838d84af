"""Stage 5, signatures: match deduplicated events against known failure signatures kept as data.

Entry points: :func:`load_signatures` (``knowledge_base/signatures/*.yaml`` in, validated
:class:`SignatureSet` out; raises :class:`SignatureError`) and :func:`match_signatures`
(template groups in, :class:`~diag_service.domain.SignatureHit` list out).
"""

from diag_service.signatures.catalog import (
    SignatureError,
    SignatureSet,
    SignatureSpec,
    default_signature_dir,
    load_signatures,
    match_signatures,
)

__all__ = [
    "SignatureError",
    "SignatureSet",
    "SignatureSpec",
    "default_signature_dir",
    "load_signatures",
    "match_signatures",
]
