"""Launcher and platform messages that say whose failure it is (public corpus dev cases; vendor documents in
knowledge_base/signatures/launchers.yaml), with the counter-examples that must not move."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from diag_service.domain import Diagnosis
from diag_service.pipeline import DiagnoseRequest, diagnose

Case = Callable[[str], Diagnosis]


def _text(tmp_path: Path, text: str):
    p = tmp_path / "console.log"
    p.write_text(text)
    return diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))


@pytest.mark.parametrize(("cid", "category", "mode", "signature"), [
    # Open MPI's TCP BTL meets a process it did not expect (Docker bridge / masqueraded addresses): interfaces
    ("n9b-006", "config", "fail_hang", "openmpi_tcp_wrong_interface"),
    ("n9b-007", "config", "fail_hang", "openmpi_tcp_wrong_interface"),
    # SkyPilot's managed-job controller failed itself (ManagedJobStatus FAILED_CONTROLLER), not the training
    ("n10-013", "framework", "fail_stop", "skypilot_controller_failed"),
    ("n10-014", "framework", "fail_stop", "skypilot_controller_failed"),
    # DeepSpeed's pdsh launch took a .bashrc's login output as the master address
    ("n10-027", "config", "fail_stop", "master_addr_not_an_address"),
    # ... and in a Kubernetes pod found no address at all ('hostname -I' printed nothing): --master_addr= empty
    ("n13b-013", "config", "fail_stop", "master_addr_empty"),
    # the MPI Operator's launcher could not reach the API server to kubectl-exec its daemons
    ("n11a-006", "infrastructure", "fail_stop", "k8s_api_server_unreachable"),
    # a cloud image's NCCL_GRAPH_FILE written for another VM size
    ("n11a-019", "config", "fail_stop", "nccl_graph_file_mismatch"),
    # a plugin-injected topology XML without the CPU's arch (p5, a subset of GPUs): NCCL/plugin
    ("n12a-008", "framework", "fail_stop", "nccl_topology_xml_incomplete"),
    # Ascend: HCCL's notify wait timeout (EI0002) and the runtime's stream/device sync timeout (EE1002) are hang
    # symptoms, as NCCL's watchdog timeouts are (CANN error-code reference)
    ("n15a-005", "unknown", "fail_hang", "ascend_hccl_notify_timeout"),
    ("n15a-006", "unknown", "fail_hang", "ascend_stream_sync_timeout"),
    # MosaicML Composer's launcher quoting a negative return code: -7 is SIGBUS (/dev/shm in Docker)
    ("n16a-006", "storage", "fail_stop", "sigbus_shm"),
    # NCCL 2.26's graph fallback to a NIC id that NIC fusion merged away (NVIDIA/nccl#1748, a NeMo container)
    ("n13b-022", "framework", "fail_stop", "nccl_net_id_not_found"),
    # a node's raylet received SIGTERM from the launcher that started it
    ("n9b-003", "infrastructure", "fail_stop", "ray_raylet_sigterm"),
    # slurmd's spooled copy of the batch script was gone on the node
    ("n9b-027", "infrastructure", "fail_stop", "slurm_spooled_script_missing"),
])
def test_platform_messages_name_the_platform(cid: str, category: str, mode: str, signature: str, corpus_dev_case: Case) -> None:
    d = corpus_dev_case(cid)
    assert (d.category.value, d.failure_mode.value) == (category, mode), d.root_cause.summary
    assert any(h.signature_id == signature for h in d.signature_hits)


def test_a_missing_file_of_the_job_is_not_slurms(tmp_path: Path) -> None:
    d = _text(tmp_path, "slurmstepd: error: execve(): /home/user/run/train.sh: No such file or directory\n"
                        "srun: error: gpu-node-001: task 0: Exited with exit code 2\n")
    assert not any(h.signature_id == "slurm_spooled_script_missing" for h in d.signature_hits)
    assert d.category.value != "infrastructure"


def test_a_worker_sigterm_is_not_the_raylets(tmp_path: Path) -> None:
    d = _text(tmp_path, "(RayTrainWorker pid=812) Traceback (most recent call last):\n"
                        "(RayTrainWorker pid=812) KeyboardInterrupt\n"
                        "(RayTrainWorker pid=812) received SIGTERM, exiting\n")
    assert not any(h.signature_id == "ray_raylet_sigterm" for h in d.signature_hits)


def test_the_node_a_slurm_message_names_is_the_faulty_node(tmp_path: Path, corpus_dev_case: Case) -> None:
    # salloc's report of its allocation's node (soperator, --no-kill): that node, not the host writing the line
    d = corpus_dev_case("n9b-028")
    assert d.category.value == "infrastructure" and d.faulty_nodes == ["gpu-node-003"]
    d = _text(tmp_path, "gpu-node-001: srun: error: Node failure on gpu-node-007\n"
                        "gpu-node-001: srun: error: gpu-node-007: tasks 8-15: Killed\n")
    assert d.faulty_nodes == ["gpu-node-007"]


def test_gdb_thread_stacks_of_a_live_process_are_a_hang(tmp_path: Path, corpus_dev_case: Case) -> None:
    # gdb's "thread apply all bt" of a hung rank (PyTorch's NCCL cleanup loop spinning after a peer died)
    d = corpus_dev_case("n9b-026")
    assert d.failure_mode.value == "fail_hang"
    assert "Stack dumps were taken" in d.root_cause.summary


def test_gdb_stacks_of_a_core_file_are_a_crash(tmp_path: Path) -> None:
    d = _text(tmp_path, "Core was generated by `/usr/bin/python train.py'.\n"
                        "Program terminated with signal SIGSEGV, Segmentation fault.\n"
                        "#0  0x00007f1c2a3b4c5d in ncclProxyProgress () from /usr/lib/libnccl.so.2\n"
                        "(gdb) thread apply all bt\n\n"
                        "Thread 1 (Thread 0x7f1c29fff700 (LWP 4242)):\n"
                        "#0  0x00007f1c2a3b4c5d in ncclProxyProgress () from /usr/lib/libnccl.so.2\n")
    assert d.failure_mode.value == "fail_stop"


_ORTE_HELP = (
    "--------------------------------------------------------------------------\n"
    "ORTE was unable to reliably start one or more daemons.\n"
    "This usually is caused by:\n\n"
    "* not finding the required libraries and/or binaries on\n"
    "  one or more nodes. Please check your PATH and LD_LIBRARY_PATH\n"
    "  settings, or configure OMPI with --enable-orterun-prefix-by-default\n"
)


def test_open_mpis_generic_launch_help_yields_to_the_error_before_it(tmp_path: Path, corpus_dev_case: Case) -> None:
    # a worker pod's name that did not resolve yet (Volcano MPI job): the platform's DNS, not the launch options
    d = corpus_dev_case("cl-022")
    assert d.category.value == "infrastructure"
    d = _text(tmp_path, "ssh: Could not resolve hostname gpu-node-002: Name or service not known\n" + _ORTE_HELP)
    assert d.category.value == "infrastructure"
    # ssh told to use a port no sshd listens on: the launch options, as the help text says
    d = _text(tmp_path, "ssh: connect to host 10.0.0.1 port 50000: Connection refused\n\n" + _ORTE_HELP)
    assert d.category.value == "config"
    assert _text(tmp_path, _ORTE_HELP).category.value == "config"
