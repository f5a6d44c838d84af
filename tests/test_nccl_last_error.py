"""NCCL's generic error classes refined by the reason on the ``Last error:`` line
(knowledge_base/signatures/nccl_last_error.yaml).

Each block is what a rank prints when NCCL fails under PyTorch >= 2.0 (NCCL >= 2.13): the
DistBackendError line, NCCL's class line, ``Last error:`` and the text of NCCL's last WARN. The
extractor makes ``Last error:`` and its next line one event of its own, so the reason is matched by
standalone signatures whose priority beats the generic class signatures.
"""

from __future__ import annotations

import pytest

from diag_service.kb.text import analyze_text

TRACEBACK = (
    "[rank{r}]: Traceback (most recent call last):\n"
    '[rank{r}]:   File "/workspace/train.py", line 212, in <module>\n'
    "[rank{r}]:     main()\n"
    '[rank{r}]:   File "/workspace/train.py", line 88, in main\n'
    "[rank{r}]:     model = DDP(model, device_ids=[local_rank])\n"
    '[rank{r}]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/parallel/distributed.py", line 822, in __init__\n'
    "[rank{r}]:     _verify_param_shape_across_processes(self.process_group, parameters)\n"
    '[rank{r}]:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/utils.py", line 288, '
    "in _verify_param_shape_across_processes\n"
    "[rank{r}]:     return dist._verify_params_across_processes(process_group, tensors, logger)\n"
)

CLASS = {
    "system": (
        "unhandled system error",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    ),
    "internal": ("internal error", "ncclInternalError: Internal check failed."),
    "usage": ("invalid usage", "ncclInvalidUsage: This usually reflects invalid usage of NCCL library."),
    "remote": (
        "remote process exited or there was a network error",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
    ),
    "cuda": ("unhandled cuda error", "ncclUnhandledCudaError: Call to CUDA function failed."),
}


def block(cls: str, reason: str, *, rank: int = 3, version: str = "2.19.3") -> str:
    """A rank's traceback ending in the DistBackendError, the class line, ``Last error:`` and ``reason``."""
    what, detail = CLASS[cls]
    p = f"[rank{rank}]: "
    return (
        TRACEBACK.format(r=rank)
        + f"{p}torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:"
        f"275, {what} (run with NCCL_DEBUG=INFO for details), NCCL version {version}\n"
        + f"{p}{detail}\n{p}Last error:\n{p}{reason}\n"
    )


CASES = [
    # (class, reason, category, signature that decides)
    ("system", "Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)",
     "storage", "nle_shm_segment"),
    ("system", "Error while attaching to shared memory segment /dev/shm/nccl-aG4Pq1 (size 4194656), "
               "error: No such file or directory (2)", "storage", "nle_shm_segment"),
    ("system", "Call to ibv_reg_mr failed with error Cannot allocate memory", "config", "nle_ib_memlock"),
    ("system", "Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, curr state INIT, next state "
               "RTR, local GID index 3, local GID ::ffff:10.1.0.2, remote GID ::ffff:10.1.0.3",
     "config", "nle_ib_gid_invalid"),
    ("system", "Call to ibv_modify_qp failed with 110 Connection timed out, on dev rocep1s0f0:1, curr state INIT, "
               "next state RTR, local GID index 3, local GID ::ffff:192.168.2.1, remote GID ::ffff:192.168.4.1",
     "network", "nle_ib_qp_unreachable"),
    ("system", "socketStartConnect: Connect to 10.0.0.2<43521> failed : Software caused connection abort",
     "network", "nle_socket_connect_failed"),
    ("remote", "socketProgress: Connection closed by remote peer gpu-node-002<57426>",
     "network", "nle_socket_peer_closed"),
    ("internal", "NET/Socket : no interface found", "config", "nle_socket_no_interface"),
    # the proxy failed the transport's Connect step (dev cl-025, n2net-028): the nodes' connection, no NCCL bug
    ("internal", "Proxy Call to rank 7 failed (Connect)", "network", "nle_proxy_connect_failed"),
    ("internal", "Bootstrap Root : mismatch in rank count from procs 16 : 8", "config", "nle_bootstrap_rank_mismatch"),
    ("usage", "Mismatched NCCL version detected : rank 8 version 21805 rank 0 version 21903",
     "config", "nle_version_mismatch"),
    ("usage", "Error: network AWS Libfabric not found.", "config", "nle_net_plugin_not_found"),
    ("cuda", "Cuda failure 'driver shutting down'", "unknown", "nle_cuda_driver_shutting_down"),
]


@pytest.mark.parametrize(("cls", "reason", "category", "sig"), CASES, ids=[c[3] + "-" + c[0] for c in CASES])
def test_last_error_reason_decides(cls: str, reason: str, category: str, sig: str) -> None:
    d = analyze_text(block(cls, reason))
    assert d.category.value == category, [(h.signature_id, h.category.value, h.priority) for h in d.signature_hits]
    top = d.signature_hits[0]
    assert top.signature_id == sig
    # the generic class signature still matched its own line, and lost
    generic = {"system": "nccl_system_error", "internal": "nccl_internal_error", "usage": "nccl_invalid_usage",
               "remote": "nccl_remote_error", "cuda": "nccl_unhandled_cuda_error"}[cls]
    assert generic in {h.signature_id for h in d.signature_hits}


@pytest.mark.parametrize(
    ("cls", "reason", "category"),
    [
        # reasons other files already name: the new file must not take them over
        ("system", "Cuda failure 'out of memory'", "gpu_oom"),
        ("remote", "NET/IB : Got completion from peer 10.0.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 "
                   "(Recv) localGid ::ffff:10.0.210.235 remoteGids::ffff:10.0.210.236", "network"),
        ("internal", "Bootstrap : no socket interface found", "config"),
    ],
)
def test_reasons_named_elsewhere_keep_their_category(cls: str, reason: str, category: str) -> None:
    d = analyze_text(block(cls, reason))
    assert d.category.value == category
    assert not d.signature_hits[0].signature_id.startswith("nle_")


def test_nccl_debug_info_warn_line_without_last_error() -> None:
    """Older PyTorch prints no ``Last error:``; with NCCL_DEBUG=INFO the WARN line carries the reason."""
    text = (
        "gpu-node-003:881:881 [2] NCCL INFO Bootstrap : Using eth0:10.0.3.3<0>\n"
        "gpu-node-003:881:881 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.3.3<0>\n"
        "gpu-node-003:881:1022 [2] misc/ibvwrap.cc:135 NCCL WARN Call to ibv_create_qp failed with error Cannot "
        "allocate memory\n"
        "gpu-node-003:881:1022 [2] NCCL INFO transport/net_ib.cc:683 -> 2\n"
        "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
        "unhandled system error, NCCL version 2.10.3\n"
    )
    d = analyze_text(text)
    assert d.category.value == "config"
    assert d.signature_hits[0].signature_id == "nle_ib_memlock"


def test_loopback_peer_is_config() -> None:
    d = analyze_text(block("system", "socketStartConnect: Connect to 127.0.1.1<35767> failed : Connection refused"))
    assert d.category.value == "config"


def test_ib_modify_qp_retry_info_is_not_the_reason() -> None:
    """NCCL logs each retry of ibv_modify_qp at INFO; only the final WARN names the failure."""
    text = (
        "gpu-node-002:415:611 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev "
        "mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.1.0.2, remote GID "
        "::ffff:10.1.0.3, retrying 1/5 after 1000 msec of sleep\n"
    )
    d = analyze_text(text)
    assert "nle_ib_qp_unreachable" not in {h.signature_id for h in d.signature_hits}
