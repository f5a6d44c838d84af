"""EFA / libfabric completion errors (knowledge_base/signatures/frameworks.yaml, efa_completion_error).

The lines are in the exact form libfabric's EFA provider and the aws-ofi-nccl plugin print them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

EFA_RDM = (
    "libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address "
    "My EFA addr: fi_addr_efa://[fe80::13:c2ff:fe6f:f03d]:0:1072483550 My host id: gpu-node-001 Peer EFA addr: "
    "fi_addr_efa://[fe80::b8:aff:fe44:4253]:2:1518541236 Peer host id: N/A\n"
    "    gpu-node-001:451707:453373 [4] NCCL INFO Channel 00/0 : 0[4] -> 8[4] [send] via NET/AWS Libfabric/4/GDRDMA\n"
)
OFI_REQUEST = (
    "[1,2]<stdout>:gpu-node-001:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f08c0001d30 "
    "completed with error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: "
    "fi_addr_efa://[fe80::30:43ff:fe60:456b]:0:65714559\n"
)


@pytest.mark.parametrize("text", [EFA_RDM, OFI_REQUEST], ids=["libfabric-efa", "aws-ofi-nccl"])
def test_an_efa_completion_error_is_the_fabric_path_to_a_peer(tmp_path: Path, text: str) -> None:
    # dev n6-022: 'Invalid address' from the EFA provider; a dead peer gives the same, so not confident
    (tmp_path / "rank0.log").write_text(text)
    d = diagnose(DiagnoseRequest(path=str(tmp_path / "rank0.log")))
    assert d.category.value == "network", d.root_cause.summary
    assert any(h.signature_id == "efa_completion_error" for h in d.signature_hits)
    assert d.confidence < 0.5


def test_a_peer_killed_for_memory_before_the_efa_error_is_the_cause(tmp_path: Path) -> None:
    # the EFA error is what the survivors see of a peer that the OOM killer took (peer_loss)
    (tmp_path / "rank0.log").write_text(
        "[2026-02-21 13:06:46] Out of memory: Killed process 4412 (python) total-vm:912345678kB, "
        "anon-rss:498765432kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1234567kB oom_score_adj:0\n" + OFI_REQUEST
    )
    d = diagnose(DiagnoseRequest(path=str(tmp_path / "rank0.log")))
    assert d.category.value == "host_oom", d.root_cause.summary
