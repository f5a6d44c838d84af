"""Signatures of the environment a training job starts in (knowledge_base/signatures/vendor_environment.yaml, vendor
sweep 14: GPUs the PyTorch build lacks, NumPy ABI, CUDA toolchains, extensions built for another PyTorch, wheel builds):
every example, printed after a training step, is decided by its signature, and healthy lines of the same libraries
match none of them."""

from __future__ import annotations

import pytest
from catalog_checks import STEP, assert_signature_decides, in_a_log

from diag_service.domain import Category
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures
from diag_service.signatures.catalog import SignatureError, SignatureFile, default_signature_dir
from diag_service.yamlio import load_yaml_model


def _specs():
    parsed, _text, _node = load_yaml_model(default_signature_dir() / "vendor_environment.yaml", SignatureFile,
                                           SignatureError, name="vendor_environment.yaml", empty={})
    return parsed.signatures


_SPECS = _specs()
_CASES = [(s.id, s.category, ex) for s in _SPECS for ex in s.examples]


@pytest.mark.parametrize(("sig_id", "category", "line"), _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_environment_signature_decides(sig_id: str, category: Category, line: str) -> None:
    text = in_a_log(line)
    spec = next(s for s in _SPECS if s.id == sig_id)
    if spec.confidence >= 0.5:  # a weaker entry (corrected errors, a hung task's follow-up lines) is evidence, not a verdict
        assert_signature_decides(text, sig_id, category)
    else:
        assert sig_id in {h.signature_id for h in analyze_text(text).signature_hits}


def test_ids_prefixed_sourced_and_loaded() -> None:
    assert len(_SPECS) >= 8
    for spec in _SPECS:
        assert spec.id.startswith("ve_") and spec.source and spec.source.startswith("https://"), spec.id
    assert {s.id for s in _SPECS} <= {c.spec.id for c in load_signatures().signatures}


@pytest.mark.parametrize("line", [
    "Using /home/user/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
    "Emitting ninja build file /home/user/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...",
    "Successfully built flash-attn",
    "xFormers 0.0.23 (PyTorch 2.1.0+cu121 with CUDA 1201)",
    "NVIDIA H100 80GB HBM3 with CUDA capability sm_90",
])
def test_healthy_lines_of_the_same_stacks_match_none(line: str) -> None:
    ids = {s.id for s in _SPECS}
    hits = {h.signature_id for h in analyze_text(STEP + line + "\n").signature_hits}
    assert not hits & ids, hits

