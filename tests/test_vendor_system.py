"""Signatures of the layers under a training job (knowledge_base/signatures/vendor_system.yaml, vendor sweep 13: DCGM,
the kernel, file system clients, InfiniBand / EFA / UCX, schedulers): every example, printed after a training step, is
matched by its signature (and decides the category where its confidence names one), and healthy lines of the same
layers match none of them."""

from __future__ import annotations

import pytest
from catalog_checks import STEP, assert_signature_decides, in_a_log

from diag_service.domain import Category
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures
from diag_service.signatures.catalog import SignatureError, SignatureFile, default_signature_dir
from diag_service.yamlio import load_yaml_model


def _specs():
    parsed, _text, _node = load_yaml_model(default_signature_dir() / "vendor_system.yaml", SignatureFile,
                                           SignatureError, name="vendor_system.yaml", empty={})
    return parsed.signatures


_SPECS = _specs()
_CASES = [(s.id, s.category, ex) for s in _SPECS for ex in s.examples]


@pytest.mark.parametrize(("sig_id", "category", "line"), _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_system_signature_matches(sig_id: str, category: Category, line: str) -> None:
    text = in_a_log(line)
    spec = next(s for s in _SPECS if s.id == sig_id)
    if spec.confidence >= 0.5:  # a weaker entry (corrected errors, a hung task's follow-up lines) is evidence, not a verdict
        assert_signature_decides(text, sig_id, category)
    else:
        assert sig_id in {h.signature_id for h in analyze_text(text).signature_hits}


def test_ids_prefixed_sourced_and_loaded() -> None:
    assert len(_SPECS) >= 15
    for spec in _SPECS:
        assert spec.id.startswith("vk_") and spec.source and spec.source.startswith("https://"), spec.id
    assert {s.id for s in _SPECS} <= {c.spec.id for c in load_signatures().signatures}


@pytest.mark.parametrize("line", [
    "[    2.104331] pcieport 0000:00:01.0: AER: enabled with IRQ 122",
    "[    3.511020] EDAC MC: Ver: 3.0.0",
    "[    4.881230] mlx5_core 0000:41:00.0: firmware version: 28.39.1002",
    "        Physical state: LinkUp",
    "[    9.120044] nvme nvme0: 8/0/0 default/read/poll queues",
    "Mar  3 02:19:07 gpu-node-014 kernel: Lustre: Lustre: Build Version: 2.15.3",
    "[2024-05-02T03:11:52.410] Node gpu-node-003 now responding",
    "Persistence mode for GPU 0 is enabled.",
])
def test_healthy_lines_of_the_same_stacks_match_none(line: str) -> None:
    ids = {s.id for s in _SPECS}
    hits = {h.signature_id for h in analyze_text(STEP + line + "\n").signature_hits}
    assert not hits & ids, hits


def test_a_daemons_line_in_a_syslog_file_is_read_without_its_program_name(tmp_path) -> None:
    """A journal / syslog file's prefix (time, host, ``program[pid]: ``) is cut before the signatures read a line: an entry
    that quoted the program's name (``systemd-oomd[939]: Killed ...``) missed the kill in such a file (vendor sweep 13)."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    log = tmp_path / "messages"
    log.write_text(
        "Apr 12 19:04:40 gpu-login-01 kernel: eth0: link up\n"
        "Apr 12 19:04:42 gpu-login-01 systemd-oomd[939]: Killed /user.slice/user-1000.slice/user@1000.service/app.slice/"
        "run-r25ac.scope due to memory pressure for /user.slice/user-1000.slice/user@1000.service being 82.3% > 50.0% for "
        "> 20s with reclaim activity\n"
    )
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.category is Category.HOST_OOM and d.faulty_nodes == ["gpu-login-01"], d.root_cause.summary
