"""Launcher and platform messages that say whose failure it is (public corpus dev cases; vendor documents in
knowledge_base/signatures/launchers.yaml), with the counter-examples that must not move."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

ROOT = Path(__file__).resolve().parents[1]
SPLIT = json.loads((ROOT / "eval" / "corpus" / "split.json").read_text())
DEV = set(SPLIT["dev"]).union(*(a["dev"] for a in SPLIT["additions"]))


def _case(cid: str):
    assert cid in DEV, f"{cid} is not a dev case"
    return diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{cid}.log"), kb=False, llm=False))


def _text(tmp_path: Path, text: str):
    p = tmp_path / "console.log"
    p.write_text(text)
    return diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))


@pytest.mark.parametrize(("cid", "category", "mode", "signature"), [
    # Open MPI's TCP BTL meets a process it did not expect (Docker bridge / masqueraded addresses): interfaces
    ("n9b-006", "config", "fail_hang", "openmpi_tcp_wrong_interface"),
    ("n9b-007", "config", "fail_hang", "openmpi_tcp_wrong_interface"),
    # a node's raylet received SIGTERM from the launcher that started it
    ("n9b-003", "infrastructure", "fail_stop", "ray_raylet_sigterm"),
    # slurmd's spooled copy of the batch script was gone on the node
    ("n9b-027", "infrastructure", "fail_stop", "slurm_spooled_script_missing"),
])
def test_platform_messages_name_the_platform(cid: str, category: str, mode: str, signature: str) -> None:
    d = _case(cid)
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


def test_the_node_a_slurm_message_names_is_the_faulty_node(tmp_path: Path) -> None:
    # salloc's report of its allocation's node (soperator, --no-kill): that node, not the host writing the line
    d = _case("n9b-028")
    assert d.category.value == "infrastructure" and d.faulty_nodes == ["gpu-node-003"]
    d = _text(tmp_path, "gpu-node-001: srun: error: Node failure on gpu-node-007\n"
                        "gpu-node-001: srun: error: gpu-node-007: tasks 8-15: Killed\n")
    assert d.faulty_nodes == ["gpu-node-007"]
