"""The catalogue files compiled from blind vendor sweeps, each entry sourced and prefixed by its file: stacks other than
CUDA/NCCL (``vendor_accelerators.yaml``, sweep 11), the layers under a job (``vendor_system.yaml``, sweep 13: DCGM, the
kernel, file system clients, InfiniBand / EFA / UCX, schedulers), the environment it starts in
(``vendor_environment.yaml``, sweep 14), checkpoints and model state (``vendor_checkpoint.yaml``, sweep 15) and
resources running out (``vendor_resources.yaml``, sweep 16). Every example, printed after a training step (an
exception's line under a traceback), is matched by its signature and decides the category where its confidence names
one (corrected errors and a hung task's follow-up lines are evidence, not a verdict); healthy lines of the same stacks
match none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_checks import STEP, assert_signature_decides, catalogue_specs, in_a_log

from diag_service.domain import Category
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures

#: file -> (id prefix, at least this many entries, healthy lines of the same stacks)
FILES = {
    "vendor_accelerators.yaml": ("va_", 15, [
        "amdgpu 0000:c1:00.0: amdgpu: 14 correctable hardware errors detected in umc block",
        "2026:11:03-14:22:07:(48213) |CCL_WARN| MPI transport was not initialized, fallback to OFI transport",
        "[PTA]:Failed to bind IRQ affinity for device 3. This will result in 2 CPU cores remaining unused",
        "I1103 14:22:07.000000 48213 tpu_initializer_helper.cc:116] libtpu.so already loaded",
    ]),
    "vendor_system.yaml": ("vk_", 30, [
        "[    2.104331] pcieport 0000:00:01.0: AER: enabled with IRQ 122",
        "[    3.511020] EDAC MC: Ver: 3.0.0",
        "[    4.881230] mlx5_core 0000:41:00.0: firmware version: 28.39.1002",
        "        Physical state: LinkUp",
        "[    9.120044] nvme nvme0: 8/0/0 default/read/poll queues",
        "Mar  3 02:19:07 gpu-node-014 kernel: Lustre: Lustre: Build Version: 2.15.3",
        "[2024-05-02T03:11:52.410] Node gpu-node-003 now responding",
        "Persistence mode for GPU 0 is enabled.",
    ]),
    "vendor_environment.yaml": ("ve_", 8, [
        "Using /home/user/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
        "Emitting ninja build file /home/user/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...",
        "Successfully built flash-attn",
        "xFormers 0.0.23 (PyTorch 2.1.0+cu121 with CUDA 1201)",
        "NVIDIA H100 80GB HBM3 with CUDA capability sm_90",
    ]),
    "vendor_resources.yaml": ("vr_", 9, [
        "[INFO] [utils.py:789:see_memory_usage] CPU Virtual Memory:  used = 191.42 GB, percent = 18.7%",
        "Normal  NodeHasSufficientMemory  node/gpu-node-031  Node gpu-node-031 status is now: NodeHasSufficientMemory",
        "srun: job 4521337 queued and waiting for resources",
        "4521337.0|COMPLETED|0:0",
        "[WARNING] /dev/shm size might be too small, if running in docker increase to at least --shm-size='1gb'",
    ]),
    "vendor_checkpoint.yaml": ("vck_", 7, [
        "[Torch] Saving checkpoints/global_step1000/mp_rank_00_model_states.pt...",
        "There were missing keys in the checkpoint model loaded: ['lm_head.weight'].",
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
        "Deleting 1 checkpoints to make room for new checkpoint.",
        "Checkpoint directory /checkpoints exists and is not empty.",
    ]),
}
_SPECS = {name: catalogue_specs(name) for name in FILES}
_CASES = [(name, s.id, s.category, s.confidence, ex) for name, specs in _SPECS.items() for s in specs for ex in s.examples]
_HEALTHY = [(name, line) for name, (_p, _n, lines) in FILES.items() for line in lines]


@pytest.mark.parametrize(("name", "sig_id", "category", "confidence", "line"), _CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(_CASES)])
def test_every_example_is_matched(name: str, sig_id: str, category: Category, confidence: float, line: str) -> None:
    text = in_a_log(line)
    if confidence >= 0.5:
        assert_signature_decides(text, sig_id, category)
    else:
        assert sig_id in {h.signature_id for h in analyze_text(text).signature_hits}


@pytest.mark.parametrize("name", sorted(FILES))
def test_ids_prefixed_sourced_and_loaded(name: str) -> None:
    prefix, least, _lines = FILES[name]
    specs = _SPECS[name]
    assert len(specs) >= least
    for spec in specs:
        assert spec.id.startswith(prefix) and spec.source and spec.source.startswith("https://"), spec.id
    assert {s.id for s in specs} <= {c.spec.id for c in load_signatures().signatures}


@pytest.mark.parametrize(("name", "line"), _HEALTHY)
def test_healthy_lines_of_the_same_stacks_match_none(name: str, line: str) -> None:
    ids = {s.id for s in _SPECS[name]}
    hits = {h.signature_id for h in analyze_text(STEP + line + "\n").signature_hits}
    assert not hits & ids, hits


def test_a_daemons_line_in_a_syslog_file_is_read_without_its_program_name(tmp_path: Path) -> None:
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
