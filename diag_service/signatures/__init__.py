"""Stage 5, signatures: match deduplicated events against known failure signatures kept as data.

Entry points: :func:`load_signatures` (``knowledge_base/signatures/*.yaml``, then the folders of
``$DIAG_SIGNATURES_PATH`` and installed signature packs, in; validated :class:`SignatureSet` out; raises
:class:`SignatureError`), :func:`site_catalog` (the same, cached, plus one site folder) and :func:`match_signatures`
(template groups in, :class:`~diag_service.domain.SignatureHit` list out).
"""

from diag_service.signatures.catalog import (
    SIGNATURE_PACK_GROUP,
    SIGNATURES_PATH_ENV,
    SignatureError,
    SignatureSet,
    SignatureSpec,
    default_signature_dir,
    load_signatures,
    match_signatures,
    signature_search_path,
    site_catalog,
)

__all__ = [
    "SIGNATURES_PATH_ENV",
    "SIGNATURE_PACK_GROUP",
    "SignatureError",
    "SignatureSet",
    "SignatureSpec",
    "default_signature_dir",
    "load_signatures",
    "match_signatures",
    "signature_search_path",
    "site_catalog",
]
