"""Grounded root-cause narratives from a local (or site-served) language model.

One entry point, :func:`summarize`: a :class:`~diag_service.domain.Diagnosis` in, a
:class:`~diag_service.domain.Narrative` out (2-3 sentences citing evidence-pack ids, ``source``
``model`` or ``fallback``). It never raises for model problems. See ``docs/llm.md``.

Parts: :mod:`.pack` (evidence pack: the model's only input), :mod:`.backends` (llama.cpp via
xllamacpp, transformers, OpenAI-compatible HTTP), :mod:`.weights` (packaged weights, sha256-checked),
:mod:`.output` (JSON answer and claim checks), :mod:`.fallback`, :mod:`.cache`, :mod:`.config`.
"""

from diag_service.llm.backends import (
    Backend,
    Generation,
    GenerationError,
    GenerationRequest,
    LlamaCppBackend,
    OpenAIBackend,
    TransformersBackend,
    backend_name,
    clear_backends,
    get_backend,
    resolve_kind,
)
from diag_service.llm.cache import SummaryCache, cache_key
from diag_service.llm.config import LlmConfig, LlmConfigError, LlmError, ModelSpec, default_cache_dir, default_config
from diag_service.llm.fallback import fallback_summary
from diag_service.llm.output import AnswerError, ModelAnswer, check_answer, parse_answer
from diag_service.llm.pack import EvidencePack, PackItem, build_evidence_pack, cited_items, sanitize
from diag_service.llm.summarize import LocalSummarizer, SummaryResult, summarize, summarize_detailed
from diag_service.llm.weights import ModelIntegrityError, ModelUnavailable, model_file

__all__ = [
    "LocalSummarizer",
    "AnswerError",
    "Backend",
    "EvidencePack",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "LlamaCppBackend",
    "LlmConfig",
    "LlmConfigError",
    "LlmError",
    "ModelAnswer",
    "ModelIntegrityError",
    "ModelSpec",
    "ModelUnavailable",
    "OpenAIBackend",
    "PackItem",
    "SummaryCache",
    "SummaryResult",
    "TransformersBackend",
    "backend_name",
    "build_evidence_pack",
    "cache_key",
    "check_answer",
    "cited_items",
    "clear_backends",
    "default_cache_dir",
    "default_config",
    "fallback_summary",
    "get_backend",
    "model_file",
    "parse_answer",
    "resolve_kind",
    "sanitize",
    "summarize",
    "summarize_detailed",
]
