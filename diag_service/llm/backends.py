"""Text-generation backends behind one interface, :class:`Backend`.

- :class:`LlamaCppBackend`: the packaged GGUF file run by ``xllamacpp`` (llama.cpp) on CPU, with the
  answer's JSON Schema enforced during decoding. Loads in 1-5 s. The default (``backend: auto``)
  when ``xllamacpp`` imports: measured faster than transformers here (``eval/bench/bench_llm.py``).
- :class:`TransformersBackend`: the same GGUF de-quantised to fp32 by ``transformers`` (needs ``gguf``
  and ``accelerate``) on CPU. The first load converts (Qwen 0.5B: about a minute) and saves the
  result as safetensors under ``<cache>/llm/hf/<sha256[:16]>/``; later loads read that folder.
  Decoding is unconstrained; the answer is primed with ``{"summary": "``.
- :class:`OpenAIBackend`: an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, llama.cpp
  server, Ollama) through ``httpx``, with connect/read timeouts and retries on transport errors,
  429 and 5xx.

Local backends are loaded once per process (:func:`get_backend` keeps them) and are never pointed at
a hub: every ``from_pretrained`` names a local folder with ``local_files_only=True`` (transformers then
makes no hub call; nothing is written to the host's environment), and files are read only from the
verified cache (:mod:`diag_service.llm.weights`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from diag_service.errors import DiagError, ErrorKind
from diag_service.llm.config import LlmConfig, LlmError, ModelSpec, OpenAIConfig
from diag_service.llm.weights import ModelUnavailable, locate_part, model_file, verify_file

_log = logging.getLogger("diag_service.llm")


class GenerationError(LlmError):
    """A backend failed to produce an answer (runtime error, timeout, HTTP error, empty output)."""


@dataclass
class GenerationRequest:
    """One chat completion. ``json_schema``: constrain the answer when the backend can; ``prefill``:
    text the answer must start with (used by backends that cannot constrain)."""

    messages: list[dict[str, str]]
    max_new_tokens: int = 160
    temperature: float = 0.0
    timeout_s: float = 120.0
    json_schema: dict[str, Any] | None = None
    prefill: str | None = '{"summary": "'


@dataclass
class Generation:
    """A backend's answer. Token counts are the backend's own; times in seconds (0 when unknown)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_s: float = 0.0
    generate_s: float = 0.0
    total_s: float = 0.0
    cached_prompt_tokens: int = 0
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """Anything that turns chat messages into text. ``name`` identifies backend and weights (``Narrative.model``)."""

    @property
    def name(self) -> str: ...

    def generate(self, request: GenerationRequest) -> Generation: ...


#: What to tell a user whose install lacks the summary runtimes (xllamacpp or transformers).
LLM_EXTRA_HINT = "local summaries need the [llm] extra: pip install 'diag-service[llm]'"


def resolve_model_file(config: LlmConfig) -> tuple[Path, str, ModelSpec | None]:
    """``(verified GGUF path, sha256, spec)`` of the configured model.

    A site's own ``model_path`` must come with ``model_sha256``. Raises :class:`ModelUnavailable`
    (or its subclass :class:`~diag_service.llm.weights.ModelIntegrityError`).
    """
    if config.model_path is not None:
        if not config.model_sha256:
            raise ModelUnavailable("model_path is set without model_sha256: a model file is used only when its hash is pinned")
        return verify_file(config.model_path, config.model_sha256), config.model_sha256, None
    spec = config.spec()
    return model_file(spec, config.llm_cache_dir), spec.sha256, spec


def _model_label(config: LlmConfig, sha: str) -> str:
    base = config.model if config.model_path is None else Path(config.model_path).name
    return f"{base}@{sha[:12]}"


class LlamaCppBackend:
    """llama.cpp through ``xllamacpp``. ``threads``: prompt-processing threads; ``decode_threads``: generation.

    With ``config.cache`` on, the prompt's KV state is kept across processes: the first generation of a
    process first restores ``<cache>/llm/kv/<sha256[:16]>/prompt-<xllamacpp version>.bin`` into the slot
    (llama.cpp then reuses the tokens the new prompt shares with it: at least the system prompt and the
    few-shot example, about 60 % of a prompt), and the first generation that finds no such file writes
    it (through a temporary name, renamed). Restore and save go through the slot endpoints of the
    server ``xllamacpp`` runs on a loopback port for this process (closed to other local users by a
    per-process API key); any failure is logged and ignored.

    Raises :class:`ModelUnavailable` when ``xllamacpp`` or the model is missing, :class:`GenerationError`
    when llama.cpp cannot load the file.
    """

    kind = "llamacpp"

    def __init__(self, config: LlmConfig) -> None:
        path, sha, _ = resolve_model_file(config)
        try:
            import xllamacpp as xlc
        except ImportError as exc:
            raise ModelUnavailable("xllamacpp is not installed: pip install xllamacpp==2026.10.11549") from exc
        t0 = time.perf_counter()
        p = xlc.CommonParams()
        p.model.path = str(path)
        p.n_ctx = config.n_ctx
        p.n_parallel = 1
        threads, decode_threads = config.resolved_threads()
        p.cpuparams.n_threads = decode_threads
        p.cpuparams_batch.n_threads = threads
        p.cpuparams.poll = 0  # no busy-wait: other processes share these cores
        p.cpuparams_batch.poll = 0
        p.warmup = False
        p.verbosity = -1
        p.offline = True
        # xllamacpp also serves the model over HTTP on a loopback port; a per-process key keeps other
        # local users off it (the in-process calls below do not go through HTTP)
        self._api_key = secrets.token_hex(16)
        p.api_keys = [self._api_key]
        self._state_dir: Path | None = config.llm_cache_dir / "kv" / sha[:16] if config.cache else None
        self._state_file = f"prompt-{getattr(xlc, '__version__', 'unknown')}.bin"
        if self._state_dir is not None:
            p.slot_save_path = str(self._state_dir) + os.sep  # llama.cpp appends the file name as is
            p.endpoint_slots = True
        try:
            self._server = xlc.Server(p)
        except Exception as exc:  # noqa: BLE001 - native loader errors have no common type
            raise GenerationError(f"llama.cpp could not load {path}: {exc}") from exc
        self.load_s = time.perf_counter() - t0
        self._name = f"llamacpp:{_model_label(config, sha)}"
        self.threads = (threads, decode_threads)
        self._lock = threading.Lock()
        self._state_tried = False
        #: whether this process restored the kept prompt state (``None``: not tried)
        self.state_restored: bool | None = None

    def _slot(self, action: str, filename: str) -> bool:
        """POST ``/slots/0?action=<action>`` (``save`` or ``restore``) to this process's llama.cpp server."""
        import urllib.request

        req = urllib.request.Request(f"{self._server.listening_address}/slots/0?action={action}",
                                     data=json.dumps({"filename": filename}).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self._api_key}"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback URL of our own server
                return 200 <= resp.status < 300
        except (OSError, ValueError) as exc:
            _log.info("llama.cpp prompt state %s failed: %s", action, exc)
            return False

    def _restore_state(self) -> None:
        if self._state_dir is None or self._state_tried:
            return
        self._state_tried = True
        self.state_restored = (self._state_dir / self._state_file).is_file() and self._slot("restore", self._state_file)

    def _save_state(self) -> None:
        if self._state_dir is None or (self._state_dir / self._state_file).is_file():
            return
        tmp = f"tmp-{os.getpid()}-{threading.get_ident()}-{self._state_file}"
        try:
            self._state_dir.mkdir(parents=True, exist_ok=True)
            if self._slot("save", tmp):
                os.replace(self._state_dir / tmp, self._state_dir / self._state_file)
        except OSError as exc:
            _log.info("llama.cpp prompt state not kept: %s", exc)
        finally:
            with contextlib.suppress(OSError):
                (self._state_dir / tmp).unlink(missing_ok=True)

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: GenerationRequest) -> Generation:
        body: dict[str, Any] = {
            "messages": request.messages,
            "max_tokens": request.max_new_tokens,
            "temperature": request.temperature,
            "seed": 0,
            "t_max_predict_ms": int(request.timeout_s * 1000),
        }
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": request.json_schema}}
        t0 = time.perf_counter()
        with self._lock:
            self._restore_state()
            try:
                res = self._server.handle_chat_completions(body)
            except Exception as exc:  # noqa: BLE001
                raise GenerationError(f"llama.cpp failed: {exc}") from exc
            if isinstance(res, dict) and "choices" in res:
                self._save_state()
        total = time.perf_counter() - t0
        if not isinstance(res, dict) or "choices" not in res:
            msg = res.get("error") if isinstance(res, dict) else res
            raise GenerationError(f"llama.cpp returned no choices: {str(msg)[:300]}")
        choice = res["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
        t = res.get("timings") or {}
        u = res.get("usage") or {}
        return Generation(
            text=text,
            prompt_tokens=int(u.get("prompt_tokens") or 0),
            completion_tokens=int(u.get("completion_tokens") or 0),
            cached_prompt_tokens=int(t.get("cache_n") or 0),
            prompt_s=float(t.get("prompt_ms") or 0) / 1000,
            generate_s=float(t.get("predicted_ms") or 0) / 1000,
            total_s=total,
            finish_reason=choice.get("finish_reason"),
            extra={"prompt_n": int(t.get("prompt_n") or 0)},
        )


class TransformersBackend:
    """transformers on CPU from the packaged GGUF, cached as safetensors after the first conversion.

    ``threads`` (resolved by :meth:`LlmConfig.resolved_threads`) sets ``torch.set_num_threads`` for the
    process. Raises :class:`ModelUnavailable` when torch/transformers/gguf or the model is missing,
    :class:`GenerationError` when loading fails.
    """

    kind = "transformers"
    MARKER = "diag-source.json"

    def __init__(self, config: LlmConfig) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"transformers backend unavailable: {exc}") from exc
        t0 = time.perf_counter()
        self.threads = config.resolved_threads()
        torch.set_num_threads(self.threads[0])
        folder = self._cached_folder(config)
        try:
            if folder is None:
                path, sha, _ = resolve_model_file(config)
                folder = self._convert(config, path, sha)
            self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
        except ModelUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - transformers raises many kinds
            raise GenerationError(f"transformers could not load the model: {exc}") from exc
        self.model.eval()
        self._torch = torch
        self.load_s = time.perf_counter() - t0
        marker = json.loads((folder / self.MARKER).read_text())
        self._name = f"transformers:{_model_label(config, marker['sha256'])}"
        self._lock = threading.Lock()
        self.folder = folder

    @property
    def name(self) -> str:
        return self._name

    @classmethod
    def _target(cls, config: LlmConfig) -> Path | None:
        sha = config.model_sha256 if config.model_path is not None else config.spec().sha256
        return config.llm_cache_dir / "hf" / sha[:16] if sha else None

    @classmethod
    def _cached_folder(cls, config: LlmConfig) -> Path | None:
        target = cls._target(config)
        if target is None:
            return None
        marker = target / cls.MARKER
        expected = config.model_sha256 if config.model_path is not None else config.spec().sha256
        try:
            info = json.loads(marker.read_text())
        except (OSError, ValueError):
            return None
        if info.get("sha256") != expected or not any(target.glob("*.safetensors")):
            return None
        # The package must still be installed at its pin: a removed model is not served from the cache.
        if config.model_path is None:
            from diag_service.llm.weights import locate_part

            for part in config.spec().parts:
                locate_part(part)
        return target

    @classmethod
    def _convert(cls, config: LlmConfig, path: Path, sha: str) -> Path:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        target = cls._target(config)
        assert target is not None
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True,
                                                     dtype=torch.float32)
        # save_pretrained refuses a model that still carries the GGUF quantisation config
        for obj in (model, model.config):
            if hasattr(obj, "quantization_config"):
                try:
                    delattr(obj, "quantization_config")
                except AttributeError:
                    obj.quantization_config = None
        for attr in ("hf_quantizer", "is_quantized"):
            if hasattr(model, attr):
                with contextlib.suppress(AttributeError):
                    setattr(model, attr, None if attr == "hf_quantizer" else False)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            model.save_pretrained(str(tmp), safe_serialization=True)
            tok.save_pretrained(str(tmp))
            (tmp / cls.MARKER).write_text(json.dumps({"sha256": sha, "source": path.name}))
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        del model
        return target

    def generate(self, request: GenerationRequest) -> Generation:
        torch = self._torch
        t0 = time.perf_counter()
        with self._lock:
            try:
                prompt = self.tokenizer.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True)
                prompt += request.prefill or ""
                enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
                n_prompt = int(enc["input_ids"].shape[1])
                kwargs: dict[str, Any] = {
                    "max_new_tokens": request.max_new_tokens,
                    "max_time": request.timeout_s,
                    "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                }
                if request.temperature > 0:
                    kwargs.update(do_sample=True, temperature=request.temperature)
                else:
                    kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                first_token = _FirstTokenClock()
                kwargs["stopping_criteria"] = self._stopping([first_token])
                t1 = time.perf_counter()
                with torch.inference_mode():
                    out = self.model.generate(**enc, **kwargs)
                t2 = time.perf_counter()
            except Exception as exc:  # noqa: BLE001
                raise GenerationError(f"transformers generation failed: {exc}") from exc
        new = out[0, n_prompt:]
        text = (request.prefill or "") + self.tokenizer.decode(new, skip_special_tokens=True)
        # prompt time = until the first new token exists (it includes that token's decode step)
        prompt_s = (first_token.at - t1) if first_token.at is not None else 0.0
        return Generation(text=text, prompt_tokens=n_prompt, completion_tokens=int(new.shape[0]),
                          prompt_s=prompt_s, generate_s=max(0.0, t2 - t1 - prompt_s), total_s=time.perf_counter() - t0,
                          finish_reason="length" if int(new.shape[0]) >= request.max_new_tokens else "stop")

    @staticmethod
    def _stopping(criteria: list[Any]) -> Any:
        from transformers import StoppingCriteriaList

        return StoppingCriteriaList(criteria)


class _FirstTokenClock:
    """A stopping criterion that never stops: it notes when the first new token was produced."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        if self.at is None:
            self.at = time.perf_counter()
        import torch

        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


class OpenAIBackend:
    """An OpenAI-compatible endpoint. ``client`` may be injected (tests pass an ``httpx.MockTransport``).

    The API key is read from the environment variable ``config.openai.api_key_env`` (never from a file).
    Raises :class:`ModelUnavailable` when httpx is missing; :meth:`generate` raises
    :class:`GenerationError` after the configured retries.
    """

    kind = "openai"

    def __init__(self, config: LlmConfig, client: Any | None = None) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ModelUnavailable("httpx is not installed: pip install httpx==0.28.1") from exc
        self._httpx = httpx
        self.cfg: OpenAIConfig = config.openai
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.cfg.api_key_env) if self.cfg.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        timeout = httpx.Timeout(self.cfg.timeout_s, connect=self.cfg.connect_timeout_s)
        self._client = client or httpx.Client(timeout=timeout, headers=headers)
        if client is not None:
            self._client.headers.update(headers)
        self._timeout = timeout
        self._name = f"openai:{self.cfg.model}@{self.cfg.base_url}"
        self.load_s = 0.0

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: GenerationRequest) -> Generation:
        httpx = self._httpx
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": request.messages,
            "max_tokens": request.max_new_tokens,
            "temperature": request.temperature,
        }
        if request.json_schema is not None and self.cfg.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "strict": True, "schema": request.json_schema}}
        elif self.cfg.response_format != "none":
            body["response_format"] = {"type": "json_object"}
        url = f"{self.cfg.base_url}/chat/completions"
        timeout = httpx.Timeout(min(self.cfg.timeout_s, request.timeout_s), connect=self.cfg.connect_timeout_s)
        from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        t0 = time.perf_counter()
        attempts = 0

        def once() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            try:
                resp = self._client.post(url, json=body, timeout=timeout)
            except httpx.HTTPError as exc:
                raise _Retryable(f"{type(exc).__name__}: {exc}") from None
            if resp.status_code == 429 or resp.status_code >= 500:
                raise _Retryable(f"HTTP {resp.status_code}")
            return resp

        # transport errors, 429 and 5xx are retried: backoff_s, then doubling (the first retry waits backoff_s)
        retrying = Retrying(stop=stop_after_attempt(self.cfg.retries + 1), retry=retry_if_exception_type(_Retryable),
                            wait=wait_exponential(multiplier=self.cfg.backoff_s, exp_base=2, min=self.cfg.backoff_s),
                            sleep=time.sleep)
        try:
            resp = retrying(once)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise GenerationError(f"{url}: gave up after {self.cfg.retries + 1} attempt(s): {last}") from None
        if resp.status_code != 200:
            raise GenerationError(f"{url}: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise GenerationError(f"{url}: unexpected response ({exc}): {resp.text[:300]}") from None
        u = data.get("usage") or {}
        return Generation(text=text, prompt_tokens=int(u.get("prompt_tokens") or 0),
                          completion_tokens=int(u.get("completion_tokens") or 0), total_s=time.perf_counter() - t0,
                          finish_reason=choice.get("finish_reason"), extra={"attempts": attempts})

    def close(self) -> None:
        self._client.close()


class _Retryable(DiagError):  # noqa: N818 - internal signal to tenacity, never raised out of generate()
    """A transport error, 429 or 5xx of the OpenAI-compatible server: worth another attempt."""

    kind = ErrorKind.UNAVAILABLE


_backends: dict[tuple, Backend] = {}
_backends_lock = threading.Lock()


def _key(config: LlmConfig, kind: str) -> tuple:
    return (kind, config.model, str(config.model_path), config.model_sha256, config.threads, config.decode_threads,
            config.n_ctx, str(config.cache_dir), config.cache, config.openai.model_dump_json() if kind == "openai" else "")


def resolve_kind(config: LlmConfig) -> str:
    """The backend ``auto`` stands for: ``llamacpp`` when ``xllamacpp`` can be imported, else ``transformers``."""
    if config.backend != "auto":
        return config.backend
    import importlib.util

    return "llamacpp" if importlib.util.find_spec("xllamacpp") is not None else "transformers"


#: The local backends and the package each needs at run time.
_RUNTIME = {"llamacpp": "xllamacpp", "transformers": "transformers"}
LOCAL_KINDS = tuple(_RUNTIME)


def backend_name(config: LlmConfig) -> str | None:
    """The :attr:`Backend.name` that :func:`get_backend` would give for ``config``, without loading a model.

    Lets the summary and generation caches be read before a model load (1-2 s plus the sha256 of the
    file). For llama.cpp and transformers the name is the pinned sha256's label, given only while the
    runtime package is installed and the model's files are where the pin says (a removed model is not
    served from the cache); the file is not hashed here (the load does that). ``None`` when the name
    cannot be told this way (no ``model_sha256`` for a ``model_path``, a missing package or file, an
    unknown model, backend ``none``): the caller then loads the backend to learn it. Never raises.
    """
    import importlib.util

    try:
        kind = resolve_kind(config)
        if kind == "openai":
            return f"openai:{config.openai.model}@{config.openai.base_url}"
        if kind not in _RUNTIME or importlib.util.find_spec(_RUNTIME[kind]) is None:
            return None
        if config.model_path is not None:
            if not config.model_sha256 or not Path(config.model_path).is_file():
                return None
            return f"{kind}:{_model_label(config, config.model_sha256)}"
        spec = config.spec()
        for part in spec.parts:
            locate_part(part)
        return f"{kind}:{_model_label(config, spec.sha256)}"
    except (LlmError, ImportError, ValueError):
        return None


def get_backend(config: LlmConfig) -> Backend:
    """The process-wide backend for ``config`` (loaded on first use, then reused).

    Raises :class:`ModelUnavailable`, :class:`GenerationError` or
    :class:`~diag_service.llm.config.LlmConfigError` when it cannot be created; a failed load is not
    remembered, so a later call tries again.
    """
    kind = resolve_kind(config)
    if kind == "none":
        raise ModelUnavailable("the LLM backend is 'none'")
    key = _key(config, kind)
    with _backends_lock:
        b = _backends.get(key)
        if b is None:
            needs = _RUNTIME.get(kind)
            if needs is not None:  # checked once, when the backend is created
                import importlib.util

                if importlib.util.find_spec(needs) is None:
                    raise ModelUnavailable(f"{LLM_EXTRA_HINT} ({needs} is not installed)")
            if kind == "llamacpp":
                b = LlamaCppBackend(config)
            elif kind == "transformers":
                b = TransformersBackend(config)
            elif kind == "openai":
                b = OpenAIBackend(config)
            else:  # pragma: no cover - pydantic restricts the values
                raise ModelUnavailable(f"unknown backend {kind!r}")
            _backends[key] = b
        return b


def clear_backends() -> None:
    """Forget every loaded backend (tests; frees the models once nothing else holds them)."""
    with _backends_lock:
        for b in _backends.values():
            close = getattr(b, "close", None)
            if callable(close):
                close()
        _backends.clear()
