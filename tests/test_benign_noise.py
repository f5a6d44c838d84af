"""Lines that working training jobs print at start-up must not change a diagnosis: each is injected into real
failing runs of the zoo's dev split (eval/zoo/runs) after the command line, and the answer must stay the same.
Every line is one a working run printed in a public thread (the source is beside it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run_diagnose

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs"
RUNS = ("oom_cgroup_rank_cache", "uc_lambda_workers", "hang_uneven_shards")

BENIGN = [
    # PyTorch c10d socket.cpp, store client start-up: github.com/antgroup/animate-x/issues/15
    "[W socket.cpp:601] [c10d] The IPv6 network addresses of (localhost, 51595) cannot be retrieved "
    "(gai error: -2 - Name or service not known).",
    # the same, glog header (torch >= 2.4): github.com/karpathy/nanochat/issues/42
    "[W1014 16:41:26.522544000 socket.cpp:755] [c10d] The IPv6 network addresses of (gpu-node-001.local, 59319) "
    "cannot be retrieved (gai error: 8 - nodename nor servname provided, or not known).",
    # DeepSpeed's import-time NFS check of the Triton cache: github.com/hiyouga/LlamaFactory/issues/7097
    "df: /root/.triton/autotune: No such file or directory",
    # NCCL_DEBUG=INFO without the optional net plugin (NCCL >= 2.19 wording); NCCL docs, NCCL_NET_PLUGIN
    "gpu-node-000:41000:41000 [0] NCCL INFO NET/Plugin: Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: "
    "cannot open shared object file: No such file or directory : when loading libnccl-net.so",
    # DDP reducer's performance advice, once per run: github.com/cszn/KAIR/issues/103
    "[W reducer.cpp:1303] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find "
    "any unused parameters in the forward pass. This flag results in an extra traversal of the autograd graph every "
    "iteration,  which can adversely affect performance. (function operator())",
    # c10d's IPv6 socket on a host without IPv6 (it binds IPv4): torch/csrc/distributed/c10d/socket.cpp
    "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 97 - Address family not "
    "supported by protocol).",
    # DeepSpeed fp16 dynamic loss scaling skipping a step (routine): deepspeed/runtime/fp16/loss_scaler.py
    "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
]


def _answer(path: Path) -> tuple[str, str, int | None]:
    d = run_diagnose(path)
    return d.category.value, d.failure_mode.value, d.first_failing_rank


def _with_line(src: Path, dst: Path, line: str) -> Path:
    shutil.copytree(src, dst)
    console = max((f for f in dst.rglob("*.log")), key=lambda f: f.stat().st_size)
    lines = console.read_text(errors="replace").split("\n")
    k = 1 if lines and lines[0].startswith("$ ") else 0
    console.write_text("\n".join([*lines[:k], line, *lines[k:]]))
    return dst


@pytest.mark.parametrize("run", RUNS)
def test_benign_start_up_lines_do_not_change_the_answer(run: str, tmp_path: Path) -> None:
    base = _answer(ZOO / run)
    for i, line in enumerate(BENIGN):
        assert _answer(_with_line(ZOO / run, tmp_path / f"b{i}", line)) == base, line


def test_a_run_with_only_benign_lines_reads_as_alive(tmp_path: Path) -> None:
    """Training lines and harmless start-up lines, no error and no exit: the job was still running (a hang or
    a slow job, at low confidence), not a stop; the harmless lines are not 'an error of its own'."""
    p = tmp_path / "rank0.log"
    p.write_text("\n".join([*BENIGN, *(f"step {i} loss {2.0 - i / 100:.3f} time_ms 101.{i}" for i in range(1, 30))]) + "\n")
    d = run_diagnose(p)
    assert (d.category.value, d.failure_mode.value) == ("unknown", "fail_hang")


def test_a_run_that_only_trained_reads_as_alive(tmp_path: Path) -> None:
    """Loss lines of a script's own format (no step word the progress series knows, no error, no exit) and an
    INFO line that mentions running out of memory (vLLM's CUDA-graph notice): a job still running."""
    p = tmp_path / "console.log"
    p.write_text(
        "INFO 07-17 23:41:30 model_runner.py:851] CUDA graphs can take additional 1~3 GiB memory per GPU. If you "
        "are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.\n"
        + "".join(f"17:05:{i:02d} it {i * 10} loss {0.9 - i / 100:.4f} time_ms 330.{i}\n" for i in range(1, 12))
    )
    d = run_diagnose(p)
    assert (d.category.value, d.failure_mode.value) == ("unknown", "fail_hang")
