"""One end-to-end case per fault kind, each a short log in the exact format the framework prints.

These complement tests/test_incidents_dev.py (real pasted logs): each case goes through every
stage (ingest, extract, redact, templates, signatures, localize), not only the signature regex.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

CASES = {
    "sigkill_exitcode": (
        "E0726 13:20:01.123000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
        "local_rank: 3 (pid: 5151) of binary: /usr/bin/python3\n",
        "fail_stop", "host_oom",
    ),
    "oom_killer_dmesg": (
        "[Fri Jul 26 13:19:58 2024] Out of memory: Killed process 5151 (python3) total-vm:98765432kB, anon-rss:87654321kB\n",
        "fail_stop", "host_oom",
    ),
    "sigbus_shm": (
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is possible that dataloader's "
        "workers are out of shared memory. Please try to raise your shared memory limit.\n",
        "fail_stop", "storage",
    ),
    "segfault": (
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n", "fail_stop", "unknown"
    ),
    "nan_loss": (
        "Traceback (most recent call last):\n  File \"train.py\", line 212, in <module>\n"
        "    raise ValueError(f'Loss is nan at step {step}')\n"
        "ValueError: Loss is nan at step 1200, stopping training\n",
        "fail_stop", "unknown",  # on no named rank: a batch, the learning rate or fp16's range, the line does not tell
    ),
    "nan_loss_one_rank": (  # one data-parallel replica of four: its own batch
        "[rank3]: Traceback (most recent call last):\n[rank3]:   File \"train.py\", line 212, in <module>\n"
        "[rank3]:     raise ValueError(f'Loss is nan at step {step}')\n"
        "[rank3]: ValueError: Loss is nan at step 1200, stopping training\n"
        "[rank0]: step 1190 loss 2.31\n[rank1]: step 1190 loss 2.29\n[rank2]: step 1190 loss 2.35\n",
        "fail_stop", "data",
    ),
    "import_error": (
        "Traceback (most recent call last):\n  File \"/workspace/train.py\", line 4, in <module>\n    import flash_attn\n"
        "ModuleNotFoundError: No module named 'flash_attn'\n",
        "fail_stop", "config",
    ),
    "keyerror_config": (
        "Traceback (most recent call last):\n  File \"train.py\", line 40, in build\n    lr = cfg['optim']['learning_rate']\n"
        "KeyError: 'learning_rate'\n",
        "fail_stop", "user_code",
    ),
    "no_space": (
        "Traceback (most recent call last):\n  File \"train.py\", line 300, in save\n    torch.save(state, path)\n"
        "RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 4480 vs 4368\n"
        "OSError: [Errno 28] No space left on device\n",
        "fail_stop", "storage",
    ),
    "read_only_checkpoint": (
        "PermissionError: [Errno 13] Permission denied: '/ckpt/step_100'\n"
        "OSError: [Errno 30] Read-only file system: '/ckpt/step_100'\n",
        "fail_stop", "storage",
    ),
    "rendezvous_port": (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n",
        "fail_stop", "config",
    ),
    "store_timeout": (
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 7/8 clients joined.\n",
        "fail_stop", "config",  # one client never joined: most often the launch (signature c10d_store_timeout)
    ),
    "nccl_system_error": (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
        "Last error:\nError while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888)\n",
        "fail_stop", "storage",
    ),
    "illegal_memory_access": ("RuntimeError: CUDA error: an illegal memory access was encountered\n", "fail_stop", "unknown"),
    "xid_79": (
        "Jul 26 13:20:01 gpu-node-003 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=0, GPU has fallen off the bus.\n",
        "fail_stop", "gpu_hardware",
    ),
    "nvlink_xid_74": (
        "kernel: NVRM: Xid (PCI:0000:07:00): 74, pid=1234, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, ...)\n",
        "fail_stop", "gpu_hardware",
    ),
    "collective_mismatch_debug": (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[1024]), but Rank 1 is running collective: "
        "CollectiveFingerPrint(OpType=BROADCAST, TensorShape=[10]).\n",
        "fail_stop", "framework",  # no frame says whose code path diverged: a library's, most often (corpus dev)
    ),
    "dataloader_worker_exception": (
        "KeyError: Caught KeyError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
        "  File \"/data/dataset.py\", line 52, in __getitem__\n    label = self.labels[path]\nKeyError: 'img_0001.jpg'\n",
        "fail_stop", "data",
    ),
    "rendezvous_timeout": (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n", "fail_stop", "framework",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fault_kind(tmp_path: Path, name: str) -> None:
    text, mode, category = CASES[name]
    (tmp_path / "job.log").write_text(text)
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert (d.failure_mode.value, d.category.value) == (mode, category), d.root_cause.summary
    assert d.root_cause.evidence
