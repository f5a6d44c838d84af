"""Signatures of training stacks other than CUDA/NCCL (knowledge_base/signatures/vendor_accelerators.yaml, vendor sweep
11): every example, printed after a training step (an exception's line under a traceback), is decided by its
signature, and a few healthy lines of the same stacks match none of them."""

from __future__ import annotations

import pytest
from catalog_checks import STEP, assert_signature_decides, in_a_log

from diag_service.domain import Category
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures
from diag_service.signatures.catalog import SignatureError, SignatureFile, default_signature_dir
from diag_service.yamlio import load_yaml_model


def _specs():
    parsed, _text, _node = load_yaml_model(default_signature_dir() / "vendor_accelerators.yaml", SignatureFile,
                                           SignatureError, name="vendor_accelerators.yaml", empty={})
    return parsed.signatures


_SPECS = _specs()
_CASES = [(s.id, s.category, ex) for s in _SPECS for ex in s.examples]


@pytest.mark.parametrize(("sig_id", "category", "line"), _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_accelerator_signature_decides(sig_id: str, category: Category, line: str) -> None:
    text = in_a_log(line)
    assert_signature_decides(text, sig_id, category)


def test_ids_prefixed_sourced_and_loaded() -> None:
    assert len(_SPECS) >= 15
    for spec in _SPECS:
        assert spec.id.startswith("va_") and spec.source and spec.source.startswith("https://"), spec.id
    assert {s.id for s in _SPECS} <= {c.spec.id for c in load_signatures().signatures}


@pytest.mark.parametrize("line", [
    "amdgpu 0000:c1:00.0: amdgpu: 14 correctable hardware errors detected in umc block",
    "2026:11:03-14:22:07:(48213) |CCL_WARN| MPI transport was not initialized, fallback to OFI transport",
    "[PTA]:Failed to bind IRQ affinity for device 3. This will result in 2 CPU cores remaining unused",
    "I1103 14:22:07.000000 48213 tpu_initializer_helper.cc:116] libtpu.so already loaded",
])
def test_healthy_lines_of_the_same_stacks_match_none(line: str) -> None:
    ids = {s.id for s in _SPECS}
    hits = {h.signature_id for h in analyze_text(STEP + line + "\n").signature_hits}
    assert not hits & ids, hits
