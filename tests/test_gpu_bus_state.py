"""A GPU that no longer answers on PCIe or needs a reset (knowledge_base/signatures/gpu.yaml).

Lines are in the form lspci, the NVIDIA kernel driver (NVRM) and nvidia-smi print them, after the
job's own symptom (a collective timeout, a CUDA error), as they are pasted in issue threads.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

WATCHDOG = (
    "[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=86645, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1805320 milliseconds before timing out.\n"
)
LSPCI = (
    "1a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev a1)\n"
    "1a:00.1 Audio device: NVIDIA Corporation TU102 High Definition Audio Controller (rev a1)\n"
    "1c:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev {rev})\n"
    "1c:00.1 Audio device: NVIDIA Corporation TU102 High Definition Audio Controller (rev {rev})\n"
)


def _diag(tmp_path: Path, text: str):
    (tmp_path / "node.log").write_text(text)
    return diagnose(DiagnoseRequest(path=str(tmp_path / "node.log")))


def test_a_gpu_at_rev_ff_has_dropped_off_the_bus(tmp_path: Path) -> None:
    # dev gpu-036: three ranks time out in an all_reduce; lspci shows the fourth GPU at rev ff
    text = "".join(WATCHDOG.format(r=r) for r in (1, 2, 3)) + "$ lspci | grep -i nvidia\n" + LSPCI.format(rev="ff")
    d = _diag(tmp_path, text)
    assert d.category.value == "gpu_hardware", d.root_cause.summary
    assert any(h.signature_id == "gpu_pci_rev_ff" for h in d.signature_hits)


def test_healthy_lspci_output_names_nothing(tmp_path: Path) -> None:
    text = "".join(WATCHDOG.format(r=r) for r in (1, 2, 3)) + "$ lspci | grep -i nvidia\n" + LSPCI.format(rev="a1")
    assert _diag(tmp_path, text).category.value == "unknown"


def test_a_gpu_that_needs_a_reset_is_the_hardware_not_the_device_setting(tmp_path: Path) -> None:
    # dev n4net-018: NCCL tests fail with "busy or unavailable" on every GPU set that includes the
    # GPU whose driver state requires a reset
    text = (
        "gpu-node-001: Test CUDA failure common.cu:1006 'CUDA-capable device(s) is/are busy or unavailable'\n"
        " .. gpu-node-001 pid 95512: Test failure common.cu:1103\n"
        "$ dmesg -T | grep NVRM\n"
        " [Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
        "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874\n"
    )
    d = _diag(tmp_path, text)
    assert d.category.value == "gpu_hardware", d.root_cause.summary


def test_rev_ff_after_a_cut_traceback_is_still_read(tmp_path: Path) -> None:
    # dev gpu-036 as pasted: the watchdog timeouts, a traceback cut after its frames, then lspci
    text = (
        "".join(WATCHDOG.format(r=r) for r in (1, 2, 3))
        + "Traceback (most recent call last):\n"
        '  File "/home/user/models/detr.py", line 637, in forward\n'
        "    torch.distributed.all_reduce(num_boxes)\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py", line 1320, in all_reduce\n'
        "    work = default_pg.allreduce([tensor], opts)\n"
        + LSPCI.format(rev="ff")
    )
    d = _diag(tmp_path, text)
    assert d.category.value == "gpu_hardware", d.root_cause.summary
