"""The entry point: :func:`summarize` a :class:`~diag_service.domain.Diagnosis` into a :class:`Narrative`.

Flow: evidence pack -> summary cache -> generation cache, else the backend (loaded once per process,
and only when a generation is not cached) -> JSON answer -> checks (:mod:`diag_service.llm.output`) ->
on failure a retry with a stricter prompt when ``generation.attempts`` allows -> on failure the
deterministic summary (:mod:`diag_service.llm.fallback`). Model problems of any kind (package
missing, hash mismatch, load error, timeout, invalid JSON, uncited claims) end in the fallback,
never in an exception; the reason is logged on ``diag_service.llm`` and returned by
:func:`summarize_detailed`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from diag_service.domain import CitedItem, Diagnosis, Narrative
from diag_service.llm.backends import Backend, Generation, GenerationRequest, backend_name, get_backend
from diag_service.llm.cache import SummaryCache, cache_key, generation_key, repeatable, replayable_backend
from diag_service.llm.config import LlmConfig, LlmError, PackConfig, default_config
from diag_service.llm.fallback import fallback_summary
from diag_service.llm.output import AnswerError, CheckedAnswer, answer_schema, check_answer, parse_answer
from diag_service.llm.pack import EvidencePack, build_evidence_pack
from diag_service.llm.prompt import build_messages, load_prompts, retry_messages

log = logging.getLogger("diag_service.llm")


@dataclass
class SummaryResult:
    """What :func:`summarize_detailed` did: the narrative plus the pack, attempts and reasons.

    ``load_s``: seconds spent loading the backend in this call (None when it was not loaded here);
    ``replayed``: how many of ``attempts`` came from the generation cache instead of the model.
    """

    narrative: Narrative
    pack: EvidencePack
    cache_hit: bool = False
    fallback_reason: str | None = None
    attempts: list[Generation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    load_s: float | None = None
    replayed: int = 0


def _fallback(pack: EvidencePack, t0: float, reason: str, result: SummaryResult | None = None) -> SummaryResult:
    text, cites = fallback_summary(pack)
    n = _with_cited(Narrative(text=text, citations=cites, source="fallback", latency_s=round(time.perf_counter() - t0, 3),
                              fallback_reason=reason[:500]), pack)
    if result is None:
        result = SummaryResult(narrative=n, pack=pack)
    result.narrative = n
    result.fallback_reason = reason
    log.info("narrative fallback: %s", reason)
    return result


def _with_cited(n: Narrative, pack: EvidencePack) -> Narrative:
    """``n`` with ``cited`` filled from ``pack`` (so a reader can look every citation up)."""
    items = {i.id: i for i in pack.items}
    n.cited = [CitedItem(id=c, label=items[c].label, text=items[c].text[:300]) for c in n.citations if c in items]
    return n


def summarize_detailed(diagnosis: Diagnosis, config: LlmConfig | None = None, backend: Backend | None = None) -> SummaryResult:
    """Like :func:`summarize`, returning the evidence pack, every generation and why a fallback happened.

    ``backend`` overrides the configured one (tests, benchmarks, a site's own implementation).
    Raises :class:`TypeError` only for a ``diagnosis`` that is not a :class:`Diagnosis`.
    """
    if not isinstance(diagnosis, Diagnosis):
        raise TypeError(f"summarize expects a Diagnosis, got {type(diagnosis).__name__}")
    t0 = time.perf_counter()
    if config is None:
        try:
            config = default_config()
        except LlmError as exc:
            return _fallback(build_evidence_pack(diagnosis, PackConfig()), t0, f"configuration: {exc}")
    pack = build_evidence_pack(diagnosis, config.pack)
    if backend is None and (not config.enabled or config.backend == "none"):
        return _fallback(pack, t0, "disabled")
    if not pack.items:
        return _fallback(pack, t0, "no evidence to summarise")
    try:
        prompts = load_prompts(config)
    except LlmError as exc:
        return _fallback(pack, t0, f"prompts: {exc}")
    result = SummaryResult(narrative=Narrative(text="", source="fallback"), pack=pack)
    # The caches are read under the name the backend will have, so a cached job loads no model.
    name = backend.name if backend is not None else (backend_name(config) if config.cache else None)
    if name is None:
        try:
            backend = _load(config, result)
        except Exception as exc:  # noqa: BLE001 - any model problem ends in the fallback
            return _fallback(pack, t0, f"backend unavailable: {type(exc).__name__}: {exc}", result)
        name = backend.name
    gen = config.generation
    key = cache_key(pack.digest(), name, prompts.digest(), gen.model_dump())
    cache = SummaryCache(config.llm_cache_dir / "summaries.sqlite") if config.cache else None
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            result.narrative = _with_cited(hit.model_copy(update={"latency_s": round(time.perf_counter() - t0, 3)}), pack)
            result.cache_hit = True
            return result
    ids = sorted(pack.ids(), key=lambda s: int(s[1:]))
    schema = answer_schema(ids, pack.category_unknown)
    messages = build_messages(pack, prompts)
    checked: CheckedAnswer | None = None
    for attempt in range(gen.attempts):
        req = GenerationRequest(messages=messages, max_new_tokens=gen.max_new_tokens, temperature=gen.temperature,
                                timeout_s=gen.timeout_s, json_schema=schema)
        gkey = generation_key(name, req) if cache is not None and replayable_backend(name) else None
        out = cache.get_generation(gkey) if cache is not None and gkey is not None else None
        if out is not None:
            result.replayed += 1
        else:
            try:
                if backend is None:
                    backend = _load(config, result)
            except Exception as exc:  # noqa: BLE001 - any model problem ends in the fallback
                return _fallback(pack, t0, f"backend unavailable: {type(exc).__name__}: {exc}", result)
            try:
                out = backend.generate(req)
            except Exception as exc:  # noqa: BLE001
                result.errors.append(f"generation: {type(exc).__name__}: {exc}")
                return _fallback(pack, t0, result.errors[-1], result)
            if cache is not None and gkey is not None and repeatable(name, req, out):
                cache.put_generation(gkey, out)
        result.attempts.append(out)
        try:
            checked = check_answer(parse_answer(out.text), pack, prompt_ngrams=prompts.instruction_ngrams())
            break
        except AnswerError as exc:
            result.errors.append(str(exc))
            if attempt + 1 < gen.attempts:
                messages = retry_messages(messages, str(exc), pack, prompts)
    if checked is None:
        return _fallback(pack, t0, f"invalid answer ({len(result.attempts)} attempt(s)): {'; '.join(result.errors)}",
                         result)
    result.dropped = checked.dropped
    result.narrative = _with_cited(Narrative(
        text=checked.text, citations=checked.citations, source="model", model=name,
        suggested_category=checked.suggested_category, latency_s=round(time.perf_counter() - t0, 3),
    ), pack)
    if cache is not None:
        cache.put(key, result.narrative)
    return result


def _load(config: LlmConfig, result: SummaryResult) -> Backend:
    """:func:`get_backend` for ``config``, noting the load time in ``result`` (raises what it raises)."""
    t_load = time.perf_counter()
    backend = get_backend(config)
    result.load_s = time.perf_counter() - t_load
    return backend


def summarize(diagnosis: Diagnosis, config: LlmConfig | None = None) -> Narrative:
    """Two or three sentences about ``diagnosis`` for the incident channel, each citing evidence-pack ids.

    ``config`` defaults to ``models/llm.yaml``. The model reads only the evidence pack
    (:func:`~diag_service.llm.pack.build_evidence_pack`: redacted, without the recovery plan) and
    never decides category or action; ``suggested_category`` is set only for ``unknown`` diagnoses.
    ``Narrative.source`` is ``"model"`` or ``"fallback"``; ``latency_s`` is this call's wall time in
    seconds (model load included on the first call of a process). Never raises for model problems;
    raises :class:`TypeError` when ``diagnosis`` is not a :class:`Diagnosis`.
    """
    return summarize_detailed(diagnosis, config).narrative


class LocalSummarizer:
    """The :class:`~diag_service.contracts.Summarizer` of this package: :func:`summarize_detailed` with
    ``config`` (default ``models/llm.yaml``) and an optional ``backend`` (a site's own, or a test's)."""

    def __init__(self, config: LlmConfig | None = None, backend: Backend | None = None) -> None:
        self.config = config
        self.backend = backend

    def summarize(self, diagnosis: Diagnosis) -> SummaryResult:
        return summarize_detailed(diagnosis, self.config, self.backend)
