"""Who failed, as launchers and pastes print it: the rank must be read from each shape.

Each input is the shape a launcher prints (Open MPI's ``--tag-output``, torchelastic's agent and its
failure table, Slurm's task report), including the table as it arrives when copied from a rendered
GitHub issue (one field per line, the row run together).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.logformat import attribute, detect_prefixes
from diag_service.pipeline import DiagnoseRequest, diagnose


def _diag(tmp_path: Path, text: str):
    p = tmp_path / "console.log"
    p.write_text(text)
    return diagnose(DiagnoseRequest(path=str(p)))


# torchelastic's ChildFailedError table copied from GitHub's rendered page: headers on their own
# lines, then the row's cells run together.
FLATTENED_TABLE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
train.py FAILED
Failures:
<NO OTHER FAILURES>
Root Cause (first observed failure) :
[0]:
time
host
2023-09-14 01:45:50
gpu-node-001
rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>
traceback : signal 9 (SIGKILL) received by PID 36071
"""


def test_flattened_elastic_table_still_names_the_killed_rank(tmp_path: Path) -> None:
    d = _diag(tmp_path, FLATTENED_TABLE)
    assert d.category.value == "host_oom"
    assert d.first_failing_rank == 2


# The same report with every newline lost (a paste outside a code block, a log collector joining lines): the root
# entry's fields follow "Root Cause (first observed failure):" on its own line.
ONE_LINE_REPORT = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ============================================"
    "================ train.py FAILED ------------------------------------------------------------ Failures: "
    "[1]: time : 2024-05-01_10:11:14 host : gpu-node-001 rank : 1 (local_rank: 1) exitcode : 1 (pid: 12344) "
    "error_file: <N/A> traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html "
    "------------------------------------------------------------ Root Cause (first observed failure): [0]: time : "
    "2024-05-01_10:11:12 host : gpu-node-001 rank : 3 (local_rank: 3) exitcode : -9 (pid: 12345) error_file: <N/A> "
    "traceback : Signal 9 (SIGKILL) received by PID 12345 ============================================================\n"
)


def test_a_report_flattened_onto_one_line_still_names_the_killed_rank(tmp_path: Path) -> None:
    d = _diag(tmp_path, ONE_LINE_REPORT)
    assert d.failure_mode.value == "fail_stop" and d.category.value == "host_oom", d.root_cause.summary
    assert d.first_failing_rank == 3 and "gpu-node-001" in d.root_cause.summary
    # a line that only names the heading, with no entry after it, is not read as a record
    d = _diag(tmp_path, "Root Cause (first observed failure): see below\n")
    assert d.first_failing_rank is None


@pytest.mark.parametrize(("report", "rank"), [
    ("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n", 2),
    ("MPI_ABORT was invoked on rank 5 in communicator MPI COMMUNICATOR 3 DUP FROM 0\nwith errorcode 1.\n", 5),
    ("mpirun has exited due to process rank 3 with PID 41234 on\nnode gpu-node-002 exiting improperly. There are three "
     "reasons this could occur:\n", 3),
])
def test_open_mpis_abort_and_exit_reports_name_the_rank(tmp_path: Path, report: str, rank: int) -> None:
    """Open MPI's help-mpi-api.txt ``mpi-abort`` and help-orterun.txt ``proc-exit-no-sync`` name the process whose end
    aborted the job (an MPI_COMM_WORLD rank, or one of a duplicate of it); a sub-communicator's rank is not one."""
    d = _diag(tmp_path, "[1,0]<stdout>:epoch 0 step 10 loss 2.31\n" + report)
    assert d.first_failing_rank == rank
    d = _diag(tmp_path, "MPI_ABORT was invoked on rank 1 in communicator MPI COMMUNICATOR 4 SPLIT FROM 0\n")
    assert d.first_failing_rank is None


def test_open_mpi_tag_output_gives_the_rank() -> None:
    lines = [
        "[1,3]<stdout>:Train Epoch: 1 [52480/60000 (87%)]\tLoss: 0.449658",
        "[1,3]<stderr>:[1,3]<stderr>:Traceback (most recent call last):",
    ]
    kinds = detect_prefixes(lines)
    att = attribute(lines[1], kinds)
    assert att.rank == 3 and att.text == "Traceback (most recent call last):"
    # horovodrun's Gloo launcher: the rank alone
    assert attribute("[5]<stderr>:RuntimeError: boom", kinds).rank == 5


def test_dataloader_bus_error_under_mpirun_is_shared_memory_on_that_rank(tmp_path: Path) -> None:
    d = _diag(tmp_path, (
        "[1,0]<stdout>:Train Epoch: 1 [59520/60000 (99%)]\tLoss: 0.319679\n"
        "[1,0]<stderr>:ERROR: Unexpected bus error encountered in worker. "
        "This might be caused by insufficient shared memory (shm).\n"
        "[1,0]<stderr>:Traceback (most recent call last):\n"
        '[1,0]<stderr>:  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/dataloader.py", '
        "line 779, in _try_get_data\n"
        "[1,0]<stderr>:    data = self._data_queue.get(timeout=timeout)\n"
        "[1,0]<stderr>:RuntimeError: DataLoader worker (pid 3419) is killed by signal: Bus error.\n"
    ))
    assert d.category.value == "storage"
    assert d.first_failing_rank == 0


def _agent(time: str, tid: int, pid: int, *, failed: bool = False, host: str = "") -> str:
    """One line of torchelastic's agent (torch/distributed/elastic/multiprocessing/api.py) as glog prints it:
    the worker ``pid`` exited with SIGKILL as local rank 2 (``failed``), or is sent SIGTERM."""
    prefix = f"{host}: " if host else ""
    if failed:
        return (f"{prefix}E0629 {time} {tid} torch/distributed/elastic/multiprocessing/api.py:826] "
                f"failed (exitcode: -9) local_rank: 2 (pid: {pid}) of binary: /opt/conda/bin/python3.10\n")
    return (f"{prefix}W0629 {time} {tid} torch/distributed/elastic/multiprocessing/api.py:851] "
            f"Sending process {pid} closing signal SIGTERM\n")


def test_single_agent_console_names_the_local_rank_as_the_rank(tmp_path: Path) -> None:
    """One torchrun agent and no global rank anywhere: one node, so local rank 2 is rank 2."""
    d = _diag(tmp_path, _agent("00:06:20.120000", 140229302286144, 29734)
              + _agent("00:06:24.298000", 140229302286144, 29736, failed=True))
    assert d.category.value == "host_oom"
    assert d.first_failing_rank == 2


def test_agent_rank_is_not_guessed_across_nodes(tmp_path: Path) -> None:
    """Two nodes' agents in one console: a local rank is not a global rank."""
    d = _diag(tmp_path, _agent("00:06:24.290000", 1402, 29735, host="gpu-node-001")
              + _agent("00:06:24.298000", 1402, 29736, failed=True, host="gpu-node-001")
              + _agent("00:06:25.120000", 1403, 29734, host="gpu-node-002")
              + _agent("00:06:25.130000", 1403, 29735, host="gpu-node-002"))
    assert d.category.value == "host_oom"
    assert d.first_failing_rank is None


def test_slurm_task_out_of_memory_names_the_task(tmp_path: Path) -> None:
    d = _diag(tmp_path, (
        "slurmstepd-gpu-node-001: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.\n"
        "srun: error: gpu-node-001: task 3: Out Of Memory\n"
        "srun: launch/slurm: _step_signal: Terminating StepId=9411285.0\n"
    ))
    assert d.category.value == "host_oom"
    assert d.first_failing_rank == 3


# NCCL_DEBUG=INFO on one node, four processes (NCCL 2.18 shapes, src/init.cc and transport/*.cc):
# every process states its rank in its communicators' init lines; each also joins a 2-rank
# sub-communicator whose rank is not the global one. Only NCCL's ``host:pid:tid [dev]`` names who
# wrote the failing WARN line.
def _nccl_init(pid: int, rank: int) -> str:
    dev = rank
    return (
        f"gpu-node-001:{pid}:{pid + 90} [{dev}] NCCL INFO comm 0x55d0c8a0{rank}0 rank {rank} nranks 4 "
        f"cudaDev {dev} nvmlDev {dev} busId {dev + 1}0 commId 0x7c1d3f - Init START\n"
        f"gpu-node-001:{pid}:{pid + 90} [{dev}] NCCL INFO comm 0x55d0c8b0{rank}0 rank {rank % 2} nranks 2 "
        f"cudaDev {dev} nvmlDev {dev} busId {dev + 1}0 commId 0x2a9e41 - Init COMPLETE\n"
    )


NCCL_OOM_ON_RANK2 = (
    "".join(_nccl_init(3018450 + r, r) for r in range(4))
    + "gpu-node-001:3018452:3018452 [2] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'\n"
    + "gpu-node-001:3018452:3018452 [2] NCCL INFO enqueue.cc:1184 -> 1\n"
)


def test_nccl_process_rank_is_learnt_from_its_init_lines(tmp_path: Path) -> None:
    d = _diag(tmp_path, NCCL_OOM_ON_RANK2)
    assert d.category.value == "gpu_oom"
    assert d.first_failing_rank == 2  # the world communicator's rank, not the sub-communicator's 0


def test_nccl_process_rank_from_connection_lines_only_when_they_agree(tmp_path: Path) -> None:
    # NCCL 2.10 prints a channel line from the connecting rank (SHM/P2P), "peer -> me [receive]" for NET
    conn = (
        "gpu-node-001:3018453:3024011 [2] NCCL INFO Channel 01 : 3[1040] -> 0[1020] via SHM/direct/direct\n"
        "gpu-node-001:3018453:3024011 [2] NCCL INFO Channel 00 : 1[1030] -> 3[1040] [receive] via NET/IB/0\n"
        "gpu-node-001:3018451:3024010 [0] NCCL INFO Channel 00 : 0[1020] -> 2[1040] via SHM/direct/direct\n"
        "gpu-node-001:3018451:3024010 [0] NCCL INFO Channel 00 : 1[1030] -> 2[1040] via SHM/direct/direct\n"
    )
    warn = "gpu-node-001:{pid}:{pid} [{dev}] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'\n"
    d = _diag(tmp_path, conn + warn.format(pid=3018453, dev=2))
    assert d.first_failing_rank == 3
    # pid 3018451's lines name two different ranks (two communicators): no rank is guessed
    d = _diag(tmp_path, conn + warn.format(pid=3018451, dev=0))
    assert d.category.value == "gpu_oom" and d.first_failing_rank is None


# A paste cut right after "The above exception was the direct cause": the last traceback is missing,
# so the exception printed in full before it (on rank 0) is the event's key and carries the rank.
CHAIN_CUT = """\
ninja: build stopped: subcommand failed.
Loading extension module fused_adam...
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2104, in _run_ninja_build
[rank0]:     subprocess.run(
[rank0]:   File "/opt/conda/lib/python3.10/subprocess.py", line 526, in run
[rank0]:     raise CalledProcessError(retcode, process.args,
[rank0]: subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.

[rank0]: The above exception was the direct cause of the following exception:
"""


def test_chained_traceback_cut_before_its_last_part_keeps_the_printed_exception(tmp_path: Path) -> None:
    d = _diag(tmp_path, CHAIN_CUT)
    assert any(e.template.startswith("subprocess.CalledProcessError") for e in d.events)
    assert not any("Traceback (incomplete)" in e.template for e in d.events)
    assert d.first_failing_rank == 0


# Horovod under mpirun --tag-output with a collector's timestamp: one rank's traceback, ranks 1-3 only
# print INFO lines, and no signature names a category.
MPI_ONE_RANK_TRACEBACK = """\
2021-03-10T13:22:30.101Z: [1,1]<stdout>:Epoch 3: 41% loss=1.82
2021-03-10T13:22:30.102Z: [1,2]<stdout>:Epoch 3: 41% loss=1.79
2021-03-10T13:22:37.443Z: [1,3]<stderr>:Traceback (most recent call last):
2021-03-10T13:22:37.443Z: [1,3]<stderr>:  File "train.py", line 211, in <module>
2021-03-10T13:22:37.443Z: [1,3]<stderr>:    cfg = load_config(args.deepspeed)
2021-03-10T13:22:37.444Z: [1,3]<stderr>:  File "/usr/lib/python3.8/base64.py", line 87, in b64decode
2021-03-10T13:22:37.444Z: [1,3]<stderr>:    return binascii.a2b_base64(s)
2021-03-10T13:22:37.444Z: [1,3]<stderr>:binascii.Error: Incorrect padding
"""


def test_only_rank_with_a_traceback_is_named_when_no_signature_decides(tmp_path: Path) -> None:
    d = _diag(tmp_path, MPI_ONE_RANK_TRACEBACK)
    assert d.category.value == "unknown"
    assert d.first_failing_rank == 3


def test_two_ranks_with_tracebacks_name_no_rank_without_a_signature(tmp_path: Path) -> None:
    other = MPI_ONE_RANK_TRACEBACK.replace("[1,3]", "[1,0]").replace("Incorrect padding", "Non-base64 digit found")
    d = _diag(tmp_path, MPI_ONE_RANK_TRACEBACK + other)
    assert d.category.value == "unknown"
    assert d.first_failing_rank is None


def test_rank_that_waited_on_the_store_is_not_named_for_its_own_traceback(tmp_path: Path) -> None:
    # rank 1 gives up waiting for rank 0 (busy tokenizing): its traceback is a consequence
    text = (
        "[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, "
        "addr=[localhost]:41170, remote=[localhost]:29500) timed out after 1800000ms\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/app/train.py", line 124, in <module>\n'
        "[rank1]:     barrier()\n"
        "[rank1]: torch.distributed.DistBackendError: wait for the store failed\n"
    )
    d = _diag(tmp_path, text)
    assert d.first_failing_rank is None


def test_nccl_heartbeat_monitor_line_is_a_hang(tmp_path: Path) -> None:
    text = (
        "[rank0]:[E306 00:30:11.701177518 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
        "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog.\n"
    )
    d = _diag(tmp_path, text)
    assert d.failure_mode.value == "fail_hang"
    assert d.first_failing_rank is None


# A node's kernel log as /var/log/syslog (or `journalctl -k -o short`) writes it: time, host, program.
XID_SYSLOG = (
    "Nov 30 03:12:55 gpu-h100-042 kernel: [812334.118204] NVRM: GPU at PCI:0000:3b:00: "
    "GPU-6f1c2a0e-8d2b-4a6f-9e3c-1b7d5e0a9c42\n"
    "Nov 30 03:12:55 gpu-h100-042 kernel: [812334.118213] NVRM: Xid (PCI:0000:3b:00): 79, pid=1184421, "
    "name=python, GPU has fallen off the bus.\n"
    "Nov 30 03:12:55 gpu-h100-042 kernel: [812334.118221] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
    "Nov 30 03:13:02 gpu-h100-042 systemd[1]: nvidia-persistenced.service: Main process exited, code=exited, "
    "status=1/FAILURE\n"
)


def test_a_syslog_line_names_its_host_as_the_node(tmp_path: Path) -> None:
    kinds = detect_prefixes(XID_SYSLOG.splitlines())
    assert "syslog" in kinds
    att = attribute(XID_SYSLOG.splitlines()[3], kinds)
    assert att.node == "gpu-h100-042" and att.text.startswith("nvidia-persistenced.service")
    d = _diag(tmp_path, XID_SYSLOG)
    assert d.category.value == "gpu_hardware"
    assert d.faulty_nodes == ["gpu-h100-042"]  # the node to cordon, not "NODE"
    assert d.recovery is not None and any("gpu-h100-042" in c for c in d.recovery.commands)


def test_ray_and_skypilot_prefixes_are_stripped_and_name_the_node() -> None:
    # Ray's driver echoes a worker's output behind "(<actor> pid=N, ip=IP)"; SkyPilot behind "(head, rank=0,
    # pid=N)"; a shell prompt's "(venv) " is not a prefix
    a = attribute("(RayTrainWorker pid=2123, ip=10.0.0.2) [rank1]: Traceback (most recent call last):", frozenset())
    assert (a.text, a.rank, a.node) == ("Traceback (most recent call last):", 1, "10.0.0.2")
    a = attribute("(head, rank=0, pid=4773) AssertionError", frozenset())
    assert (a.text, a.node) == ("AssertionError", "head")
    a = attribute("(WorkerDict pid=2862157) RuntimeError: boom [repeated 3x across cluster]", frozenset())
    assert (a.text, a.node) == ("RuntimeError: boom", None)
    assert attribute("(raylet) A worker died or was killed while executing a task", frozenset()).text.startswith("A worker")
    assert attribute("(venv) user@gpu-node-001:~$ torchrun train.py", frozenset()).text.startswith("(venv)")
    assert "ray" in detect_prefixes(["(pid=81331) F0101 check failed", "(pid=81331) *** SIGABRT received"])


def test_a_traceback_behind_skypilot_prefixes_is_read_as_one(tmp_path: Path) -> None:
    text = ("(head, rank=0, pid=4773)   File \"/root/sky_workdir/Megatron-LM/megatron/core/datasets/indexed_dataset.py\", "
            "line 293, in __init__\n"
            "(head, rank=0, pid=4773)     assert self.sequence_lengths.shape[0] == self.document_indices[-1]\n"
            "(head, rank=0, pid=4773) AssertionError\n")
    d = _diag(tmp_path, text)
    assert d.category.value != "unknown" and d.signature_hits, d.root_cause.summary
    assert d.faulty_nodes == ["head"] or d.signature_hits[0].nodes == ["head"]


# Open MPI's report when a process exits non-zero (help-orterun.txt "orterun:non-zero-exit"): the vpid of
# "[[jobfamily,job],vpid]" is the MPI_COMM_WORLD rank. Rank 3's own error line carries no rank of its own.
OPEN_MPI_NON_ZERO_EXIT = """\
[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20
gpu-node-002: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'
-------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
-------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[58461,1],3]
  Exit code:    2
--------------------------------------------------------------------------
"""
# horovodrun's Gloo launcher raises the same report with the rank as the process name (gloo_run.py).
HOROVOD_NON_ZERO_EXIT = """\
Traceback (most recent call last):
  File "/usr/local/bin/horovodrun", line 8, in <module>
    sys.exit(run_commandline())
  File "/usr/local/lib/python3.8/dist-packages/horovod/runner/gloo_run.py", line 300, in launch_gloo
    raise RuntimeError('Horovod detected that one or more processes exited with non-zero '
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job \
to be terminated. The first process to do so was:
Process name: 2
Exit code: 1
"""


def test_mpirun_and_horovodrun_name_the_first_process_that_exited(tmp_path: Path) -> None:
    assert _diag(tmp_path, OPEN_MPI_NON_ZERO_EXIT).first_failing_rank == 3
    assert _diag(tmp_path, HOROVOD_NON_ZERO_EXIT).first_failing_rank == 2
    # an elastic Horovod worker is named by host and slot, not by rank: no rank is read from it
    named = HOROVOD_NON_ZERO_EXIT.replace("Process name: 2", "Process name: gpu-node-001[1]")
    assert _diag(tmp_path, named).first_failing_rank is None


def test_open_mpi_timestamped_tags_give_the_rank(tmp_path: Path) -> None:
    # mpirun --tag-output --timestamp-output: ctime() text, then the tag (iof_base_output.c)
    lines = [
        "Tue Nov 27 13:49:06 2018[1,10]<stdout>:F1127 13:49:06.743296 17418 hl_cuda_device.cc:565] Check failed: "
        "cudaSuccess == cudaStat (0 vs. 35) Cuda Error: CUDA driver version is insufficient for CUDA runtime version",
        "Tue Nov  7 13:49:06 2018[1,3]<stderr>:*** Check failure stack trace: ***",
    ]
    kinds = detect_prefixes(lines)
    att = attribute(lines[1], kinds)
    assert att.rank == 3 and att.text == "*** Check failure stack trace: ***"
    assert att.stamp == "Tue Nov  7 13:49:06 2018"
    d = _diag(tmp_path, lines[0] + "\n")
    assert d.category.value == "config"
    assert d.first_failing_rank == 10


def test_an_agent_console_pasted_on_one_line_still_names_the_failed_worker(tmp_path: Path) -> None:
    # an issue paste whose newlines were lost: the agent's SIGTERMs, its "failed (exitcode: -9) local_rank: 4"
    # and torchrun's traceback run together on one line
    line = (
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 899505 closing signal SIGTERM    "
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 899506 closing signal SIGTERM    "
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 4 (pid: 899509) of "
        "binary: /home/user/miniconda3/envs/ft/bin/python    Traceback (most recent call last):    "
        'File "/home/user/miniconda3/envs/ft/bin/torchrun", line 33, in <module>\n'
    )
    d = _diag(tmp_path, line)
    assert d.category.value == "host_oom", d.root_cause.summary
    assert d.first_failing_rank == 4


# torch.multiprocessing.spawn (detectron2, fairseq and many research repos launch with it): join() raises for the
# process it saw fail first, by its spawn index (PyTorch torch/multiprocessing/spawn.py; dev n6-025's shape).
SPAWN_RAISED = """\
Traceback (most recent call last):
  File "tools/train_net.py", line 161, in <module>
    args=(args,),
  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 158, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 2 terminated with the following error:
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap
    fn(i, *args)
  File "/work/detectron2/tools/train_net.py", line 149, in main
    return trainer.train()
  File "/work/detectron2/detectron2/engine/train_loop.py", line 274, in run_step
    loss_dict = self.model(data)
RuntimeError: CUDA error: an illegal memory access was encountered
"""

SPAWN_EXITED = """\
Traceback (most recent call last):
  File "/work/fairseq/fairseq_cli/train.py", line 557, in cli_main
    distributed_utils.call_main(cfg, main)
  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 140, in join
    raise ProcessExitedException(
torch.multiprocessing.spawn.ProcessExitedException: process 5 terminated with signal SIGKILL
"""


def test_torch_multiprocessing_spawn_names_the_process_that_failed(tmp_path: Path) -> None:
    assert _diag(tmp_path, SPAWN_RAISED).first_failing_rank == 2
    d = _diag(tmp_path, SPAWN_EXITED)
    assert d.first_failing_rank == 5
    assert d.category.value == "host_oom", d.root_cause.summary  # SIGKILL of one worker: the OOM killer's signal


@pytest.mark.parametrize(("log", "rank"), [
    # mpirun's "noticed that process rank 1 ... exited on signal 4 (Illegal instruction)" and nothing else
    ("n7-001", 1),
    # Horovod's stall report, printed by rank 0 (Open MPI's [1,0]<stderr>: tag), names rank 1 as missing
    ("n7-040", 1),
    # the same report without writer tags names rank 0 as missing
    ("n7-039", 0),
    # Horovod's newer stall report: "Missing ranks:", then "1: [tensor names]"
    ("n7-041", 1),
    # ... as stall_inspector.cc prints it now, "Stalled ranks:", behind Open MPI's [1,0]<stderr>: tag
    ("n13a-018", 6),
    # torchelastic's failure table copied from a rendered page, a blank line between its fields
    ("n8-013", 0),
    # the JAX coordination service: a task's heartbeat lost, a task restarted
    ("n7-011", 37),
    ("n7-014", 1),
    # PaddlePaddle's launcher and MPICH's abort name the failed process
    ("n8-029", 0),
    ("n8-002", 0),
    # HPE Cray PALS: "rank 0 died from signal 11 and dumped core", then rank 4 "died from signal 9"
    ("n38b-013", 0),
    # Ray Train's "Worker 0 has failed." (the dead worker actor's index in the worker group: its world rank)
    ("cl-035", 0),
    # Microsoft MPI's "job aborted:" table: "[1] process exited without calling finalize" after "[0] terminated"
    ("n29b-005", 1),
    # paddle.distributed.launch: "ABORT!!! Out of all 2 trainers, the trainer process with rank=[1] was aborted."
    ("n50a-005", 1),
])
def test_the_rank_a_launcher_names_is_the_first_failing_rank(log: str, rank: int) -> None:
    """Public corpus dev logs: the rank a launcher or framework names as failed or missing, not its reporter."""
    root = Path(__file__).resolve().parents[1]
    d = diagnose(DiagnoseRequest(path=str(root / "eval" / "corpus" / "logs" / f"{log}.log"), kb=False, llm=False))
    assert d.first_failing_rank == rank, d.root_cause.summary


def test_a_plain_date_before_a_writer_prefix_is_the_lines_stamp(tmp_path: Path) -> None:
    """A console piped through ``ts '%Y-%m-%d %H:%M:%S'`` (the real example's node 1): the rank prefixes behind the
    date are read; an application's own dated record keeps its text."""
    import datetime as dt

    root = Path(__file__).resolve().parents[1]
    lines = (root / "examples" / "torchrun_shape_mismatch_2x2" / "console_node1.log").read_text().splitlines(keepends=True)
    t0 = dt.datetime(2026, 11, 29, 8, 58, 50)
    (tmp_path / "pod.log").write_text("".join(f"{t0 + dt.timedelta(seconds=i // 10):%Y-%m-%d %H:%M:%S} {ln}"
                                              for i, ln in enumerate(lines)))
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("user_code", 3), d.root_cause.summary
    att = attribute("2024-11-20 14:37:16,123 - INFO - step 5 loss 1.2", detect_prefixes(["2024-11-20 14:37:16,123 - x"]))
    assert att.text.startswith("2024-11-20 14:37:16,123") and att.stamp is None
    att = attribute("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.", frozenset())
    assert (att.rank, att.stamp, att.text) == (3, "2024-11-20 14:37:16", "torch.OutOfMemoryError: CUDA out of memory.")


# Horovod's stall report on a 4-rank job (NCCL's init line gives nranks 4) naming every rank but the
# coordinator as missing: rank 0 alone submitted the tensor (a rank-0-only metric callback). With ranks 1 and
# 2 named, ranks 0 and 3 both submitted: nobody is the lone one.
HOROVOD_LONE = """\
[1,0]<stdout>:gpu-node-001:1234:1250 [0] NCCL INFO comm 0x55d5c0a0 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE
[1,0]<stdout>:Epoch 1/3 step 10 loss: 1.23
[1,0]<stderr>:[2024-01-01 10:00:00.000000: W /tmp/pip-install/horovod/common/stall_inspector.cc:107] One or more \
tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of \
ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or \
that only subset of ranks is submitting tensors, which will cause deadlock.
[1,0]<stderr>:Stalled ops:
[1,0]<stderr>:MetricAverageCallback/HorovodAllreduce_val_loss_0 [missing ranks: 1, 2, 3]
"""


def test_the_one_rank_a_stall_report_leaves_out_is_the_odd_one(tmp_path: Path) -> None:
    d = _diag(tmp_path, HOROVOD_LONE)
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 0
    assert any("rank 0 alone issued the collective" in f for f in d.findings), d.findings
    assert d.category.value == "user_code" and d.confidence < 0.5  # a rank-only path, most likely the job's
    two = _diag(tmp_path, HOROVOD_LONE.replace("[missing ranks: 1, 2, 3]", "[missing ranks: 1, 2]"))
    assert not any("alone issued" in f for f in two.findings), two.findings
    # ranks behind say nothing of why (public corpus dev: three such stalls never explained)
    assert two.category.value == "unknown" and two.failure_mode.value == "fail_hang"
    unsized = _diag(tmp_path, HOROVOD_LONE.split("\n", 1)[1])  # no NCCL line: the job's size is unknown
    assert not any("alone issued" in f for f in unsized.findings), unsized.findings
    # without NCCL's line, Open MPI's tags of all four ranks show the job's size
    tagged = "".join(f"[1,{r}]<stdout>:Epoch 1/3 step 10 loss: 1.2{r}\n" for r in range(1, 4))
    seen = _diag(tmp_path, tagged + HOROVOD_LONE.split("\n", 1)[1])
    assert seen.input.ranks_seen == 4 and seen.first_failing_rank == 0
    assert any("rank 0 alone issued the collective" in f for f in seen.findings), seen.findings


# torchelastic's failure report with the worker's error file (``_FAILURE_FORMAT_TEMPLATE``): the traceback is
# printed behind "traceback :" with every line indented by 2, so the exception line is indented too, shallower than
# the frames. Public corpus dev n13b-020 (pytorch/torchtitan, the ranks beyond the visible GPUs); and a paste
# whose first frame lost its indentation (dev n4fw-027).
ELASTIC_ERROR_FILE = """\
[0]:
  time      : 2024-02-21_16:05:11
  host      : gpu-node-001
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 1182)
  error_file: /tmp/torchelastic_k2j/none_q8/attempt_0/3/error.json
  traceback : Traceback (most recent call last):
    File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/home/user/torchtrain/train.py", line 162, in main
      torch.cuda.set_device(device)
    File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 470, in set_device
      torch._C._cuda_setDevice(device)
  RuntimeError: CUDA error: invalid device ordinal
  CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""

PASTE_FIRST_FRAME_UNINDENTED = """\
File "main.py", line 334, in main
    save_hf_format(model, tokenizer, args)
  File "/home/user/DeepSpeed-Chat/training/utils/utils.py", line 51, in save_hf_format
    os.makedirs(output_dir)
  File "/usr/lib/python3.8/os.py", line 223, in makedirs
    mkdir(name, mode)
FileExistsError: [Errno 17] File exists: '/home/user/output/actor/'
"""


def test_an_indented_traceback_keeps_its_exception_line(tmp_path: Path) -> None:
    d = _diag(tmp_path, ELASTIC_ERROR_FILE)
    assert any(e.template.startswith("RuntimeError: CUDA error: invalid device ordinal") for e in d.events)
    assert not any("Traceback (incomplete)" in e.template for e in d.events)
    assert d.category.value == "config"
    (tmp_path / "b").mkdir()
    d = _diag(tmp_path / "b", PASTE_FIRST_FRAME_UNINDENTED)
    assert any(e.template.startswith("FileExistsError") for e in d.events)


def test_a_blocking_wait_timeout_is_a_collective_timeout(corpus_dev_case) -> None:
    """TORCH_NCCL_BLOCKING_WAIT=1: the waiting call times out ("Work WorkNCCL(...) timed out in blocking wait",
    ProcessGroupNCCL.cpp) instead of the watchdog. Public corpus dev n13a-022 (ultralytics DDP, 3-hour timeout)."""
    d = corpus_dev_case("n13a-022")
    assert d.failure_mode.value == "fail_hang"
    assert any(h.signature_id == "nccl_watchdog_timeout" for h in d.signature_hits)
    assert "BROADCAST at SeqNum 201809" in d.root_cause.summary


@pytest.mark.parametrize("prefix", ["", "[1,0]<stderr>:", "2024-05-01T10:00:00.000000001Z ", "3: ", "[rank3]: "])
def test_a_signature_anchored_at_the_line_start_is_found_behind_a_writer_tag(tmp_path: Path, prefix: str) -> None:
    """A catalogue pattern anchored at the text's start (nvidia-smi's '^No devices were found$') reaches the signature
    stage behind an Open MPI tag, a collector's stamp, a Slurm task label or a rank prefix: the extractor's pre-filter
    runs on raw lines and must not keep the anchor."""
    d = _diag(tmp_path, f"{prefix}step 10 loss 2.31\n{prefix}step 11 loss 2.30\n{prefix}No devices were found\n")
    assert any(h.signature_id == "no_gpu_visible" for h in d.signature_hits), prefix
    assert d.category.value == "infrastructure"


def test_composers_launcher_names_the_crashed_rank(corpus_dev_case) -> None:
    """composer/cli/launcher.py: 'Rank N crashed with exit code -S' (a negative code is the signal; Python's
    Popen.returncode). Public corpus dev n16a-006 (-7, SIGBUS) and n16a-007 (-11, SIGSEGV)."""
    d = corpus_dev_case("n16a-006")
    assert (d.category.value, d.first_failing_rank) == ("storage", 2)
    d = corpus_dev_case("n16a-007")
    assert d.first_failing_rank == 0 and any(h.signature_id == "segfault" for h in d.signature_hits)


def test_torchx_replica_prefix_before_torchruns_tee_prefix_is_stripped() -> None:
    """TorchX streams each replica's lines behind ``{role}/{replica} `` (``torchx log``); torchrun's ``[defaultN]:`` and
    ``[rankN]:`` follow it (a public dev paste, n27a-021). The replica names no host; a path-like word before any
    other text stays."""
    from diag_service.logformat import attribute, detect_prefixes

    line = "i.pretrain/0 [default2]:[rank2]: RuntimeError: Rank 2, node gpu-node-001, device 2, iteration -1"
    kinds = detect_prefixes([line])
    a = attribute(line, kinds)
    assert (a.rank, a.local_rank, a.node) == (2, 2, None) and a.text.startswith("RuntimeError: Rank 2")
    plain = attribute("src/0 loss went up", detect_prefixes(["src/0 loss went up"]))
    assert plain.text == "src/0 loss went up" and plain.rank is None


def test_lightnings_reconciliation_names_the_rank_whose_exception_it_reraises(tmp_path: Path) -> None:
    """PyTorch Lightning with PL_RECONCILE_PROCESS=1: the rank that raised SIGKILLs its peers and re-raises as
    "DeadlockDetectedException: DeadLock detected from rank: 2" with its own traceback after it
    (strategies/ddp.py reconciliate_processes). The traceback's exception decides the category; the line names
    the rank, although no line of the traceback carries a rank prefix. Without the Lightning line, nobody."""
    text = (Path(__file__).parent / "fixtures" / "lightning_deadlock_rank2.log").read_text()
    d = _diag(tmp_path, text)
    assert (d.category.value, d.first_failing_rank) == ("data", 2), d.root_cause.summary
    bare = "\n".join(ln for ln in text.splitlines() if "DeadLock detected" not in ln)
    d = _diag(tmp_path, bare)
    assert d.category.value == "data" and d.first_failing_rank is None


@pytest.mark.parametrize(("line", "signature", "category"), [
    # torch <= 1.4 (torch/csrc/cuda/nccl.cpp): "NCCL Error <ncclResult_t>: <ncclGetErrorString>"
    ("RuntimeError: NCCL Error 2: unhandled system error", "nccl_system_error", "unknown"),
    # OpenSSH's sshconnect.c through mpirun's or pdsh's ssh launch: the node's sshd cannot be reached
    ("ssh: connect to host gpu-node-002 port 22: Connection refused", "pdsh_ssh_failed", "infrastructure"),
    ("huggingface_hub.utils._errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
     "https://huggingface.co/api/models/meta-llama/Llama-2-7b-hf", "hf_hub_rate_limited", "infrastructure"),
    # NCCL's net_socket.cc when no interface matches NCCL_SOCKET_IFNAME (older wording)
    ("gpu-node-001:1234:1290 [0] NCCL WARN NET/Socket : no usable interface found", "nccl_no_socket_interface",
     "config"),
    # Hugging Face datasets' free-space check before preparing a dataset (builder.py)
    ("OSError: Not enough disk space. Needed: 45.31 GiB (download: 12.50 GiB, generated: 32.81 GiB, "
     "post-processed: Unknown size)", "no_space_left", "storage"),
    # gloo's timeout with its unbound_buffer.cc origin cut off by the paste
    ("RuntimeError: Timed out waiting 1800000ms for send operation to complete", "gloo_timeout", "unknown"),
    # a script started without the launcher that sets its variables
    ("KeyError: 'LOCAL_RANK'", "launcher_env_var_missing", "config"),
    # cudaErrorNvlinkUncorrectable (CUDA runtime error 220)
    ("RuntimeError: CUDA error: an uncorrectable NVLink error was detected during the execution",
     "cuda_nvlink_uncorrectable", "gpu_hardware"),
    # CPython's faulthandler naming the signal
    ("Fatal Python error: Bus error", "sigbus_shm", "storage"),
    # Triton's launcher out of device memory
    ("RuntimeError: Triton Error [CUDA]: out of memory", "cuda_oom", "gpu_oom"),
    # Lightning's wording of DDP's unused-parameter error
    ("RuntimeError: It looks like your LightningModule has parameters that were not used in producing the loss "
     "returned by training_step.", "ddp_unused_parameters", "user_code"),
    # an object store's endpoint timing out, and a FUSE mount whose daemon died
    ("urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='s3.amazonaws.com', port=443): Read timed out. "
     "(read timeout=60)", "object_store_unavailable", "storage"),
    ("OSError: [Errno 121] Remote I/O error: '/mnt/lustre/ckpt/step_100/model.pt'", "checkpoint_io_error",
     "storage"),
    # NCCL's IB transport: the peer sent another size than this rank posted
    ("gpu-node-001:1:2 [0] NCCL WARN NET/IB : req 7/1 tag 7 peer 10.0.0.2<49732> collective mismatch error, local size "
     "1048576 remote size 524288", "gloo_collective_size_mismatch", "user_code"),
    # Slurm's munge credential expired: the nodes' clocks disagree
    ("slurmstepd: error: Munge decode failed: Expired credential", "slurm_munge_credential_expired", "infrastructure"),
    # transformers' TrainingArguments refusing bf16 on the node it landed on
    ("ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
     "hf_trainer_precision_unsupported", "config"),
    # Gaudi's bridge out of device memory, amdgpu resetting a GPU, row remapping that failed, DCGM's Xid
    ("RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::1073741824 (1024)MB",
     "gaudi_device_memory_exhausted", "gpu_oom"),
    ("[ 1234.5678] amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!", "amdgpu_gpu_reset", "gpu_hardware"),
    ("Row remapping failure occurred on GPU 0000:3B:00.0", "gpu_row_remap_failure", "gpu_hardware"),
    ("dcgmi: ERROR: XID 79 detected on GPU 3", "xid", "gpu_hardware"),
    # EFA's ENOMEM is the locked-memory limit, not the host's memory
    ("libfabric:12345:1700000000::efa:cq:efa_rdm_pke_handle_send_error():400<warn> err: 12, message: Cannot allocate "
     "memory (12)", "efa_memory_registration_failed", "config"),
    # NCCL 2.19's socket wording, and its topology error quoted as the Last error
    ("Last error: Net : Connect to 10.0.0.2<51234> failed : Connection refused", "nle_socket_connect_failed",
     "network"),
    # the kernel's hung-task detector, a NIC's link down, the container runtime without loop devices
    ("INFO: task python:12345 blocked for more than 120 seconds.", "kernel_hung_task", "infrastructure"),
    ("mlx5_core 0000:17:00.0: Port module event: module 0, Cable unplugged", "nic_link_down", "network"),
    ("FATAL:   container creation failed: mount /proc/self/fd/3->/var/lib/singularity/mnt/session/rootfs error: "
     "while mounting image /proc/self/fd/3: failed to find loop device: could not attach image file to loop device: "
     "no loop devices available", "singularity_no_loop_device", "infrastructure"),
    # Megatron's sequence parallelism without CUDA_DEVICE_MAX_CONNECTIONS=1; torchrun's --nproc-per-node values
    ("RuntimeError: Using sequence parallelism requires setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS "
     "to 1", "launch_env_requirement_unmet", "config"),
    ("ValueError: Unsupported nproc_per_node value: ''", "launch_env_requirement_unmet", "config"),
    # the kubelet's events: a node NotReady, a pod sandbox that could not be created
    ("  Warning  NodeNotReady  pod/trainer-worker-1  Node is not ready", "k8s_node_or_sandbox_failure",
     "infrastructure"),
    # Intel's Level Zero runtime out of device memory (under oneCCL here)
    ("  what():  oneCCL: ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemAllocDevice, code: "
     "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "accelerator_oom", "gpu_oom"),
    # an extension build without a CUDA compiler; accelerate's fp16 on a process without a GPU
    ("/bin/sh: 1: nvcc: not found", "f_cuda_home_missing", "config"),
    ("ValueError: fp16 mixed precision requires a GPU (not 'cpu').", "hf_trainer_precision_unsupported", "config"),
    # XLA's compile-time HBM check on a TPU
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
     "in memory space hbm. Used 20.93G of 15.48G hbm. Exceeded hbm capacity by 5.45G.", "xla_device_memory_exhausted",
     "gpu_oom"),
    # perftest's queue pair left unconnected (an unusable GID), NCCL's socket of a family the kernel lacks
    ("Failed to modify QP 59 to RTR", "vs_perftest_qp_rtr_failed", "config"),
    # c10d's FileStore (file:// init_method) says only this when the other ranks' keys never appear in its file
    ("RuntimeError: Wait timeout", "c10d_filestore_wait_timeout", "config"),
    # sweep 7: vendor documents without a source file (NVIDIA's page retirement, GPFS, cloud notices, HCCL codes)
    ("XID 64 Dynamic Page Retirement: Fatal error, unable to retire page (0x00000000000f4240)",
     "h_xid_page_retirement_text", "gpu_hardware"),
    ("mmfs: The file system gpfs01 was forced to unmount.", "h_gpfs_forced_unmount", "storage"),
    ('"detail-type": "EC2 Spot Instance Interruption Warning",', "h_cloud_instance_preempted", "infrastructure"),
    ("EI0014: The ranktable information check failed, Reason:[device ip does not match the actual device].",
     "ascend_hccl_ranktable_invalid", "config"),
    ("gpu-node-001:1234:1234 [0] misc/socket.cc:481 NCCL WARN Net : Socket creation failed : Address family not "
     "supported by protocol", "vs_nccl_socket_family_unsupported", "config"),
])
def test_older_and_tool_wordings_are_known(tmp_path: Path, line: str, signature: str, category: str) -> None:
    d = _diag(tmp_path, line + "\n")
    assert d.signature_hits and d.signature_hits[0].signature_id == signature, [h.signature_id for h in d.signature_hits]
    assert d.category.value == category


# HPE Cray PALS mpiexec (ALCF Polaris/Aurora), as in pmodels/mpich#7605 and the ALCF threads: the node's host before
# the colon, the failed rank first, then the ranks PALS SIGTERMed (signal 15) once it had failed.
PALS_ABORT = """\
x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: [rank 3] step 120 loss 2.117
./launcher.sh: line 14: 191644 Aborted                 (core dumped) $@
x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 3 exited with code 134
x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 1 died from signal 15
x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 0 died from signal 15
x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 2 died from signal 15
"""
PALS_TEARDOWN_ONLY = """\
x4006c0s6b0n0.hsn.cm.aurora.alcf.anl.gov: rank 2 died from signal 15
x4006c0s6b0n0.hsn.cm.aurora.alcf.anl.gov: rank 1 died from signal 15
"""


def test_pals_names_the_rank_that_ended_first_not_the_ones_it_terminated(tmp_path: Path) -> None:
    assert _diag(tmp_path, PALS_ABORT).first_failing_rank == 3
    # every report is PALS' own SIGTERM: none of them is the first failure
    assert _diag(tmp_path, PALS_TEARDOWN_ONLY).first_failing_rank is None


# MPICH / Intel MPI Hydra's exit report after a rank was SIGKILLed: the banner's RANK line names the process and host.
HYDRA_BANNER = """\
step 100 loss 1.2
step 110 loss 1.1

===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   RANK 5 PID 28469 RUNNING AT gpu-node-007
=   KILLED BY SIGNAL: 9 (Killed)
===================================================================================
"""


def test_hydra_banner_names_the_rank_and_node_it_saw_end(tmp_path: Path) -> None:
    d = _diag(tmp_path, HYDRA_BANNER)
    assert d.first_failing_rank == 5
    assert d.faulty_nodes == ["gpu-node-007"]
    assert d.category.value == "host_oom"


# Composer's launcher (composer/cli/launcher.py) and horovodrun's gloo launcher (horovod/runner/gloo_run.py) print the
# first process they saw fail once (vendor sweep 17's lines, in a console after training started).
COMPOSER_CRASH = """\
[batch=120/2000]: Train loss/train/total: 2.3104
ERROR:composer.cli.launcher:Rank 5 crashed with exit code -9.
ERROR:composer.cli.launcher:Global rank 0 (PID 1003409) exited with code -15
"""
HOROVOD_GLOO = """\
[1]<stdout>:step 120 loss 2.31
Process 2 exit with status code 1.
Terminating remaining workers after failure of Process 2.
Process 0 exit with status code 143.
"""


def test_composer_and_horovod_gloo_name_the_first_process_that_failed(tmp_path: Path) -> None:
    assert _diag(tmp_path, COMPOSER_CRASH).first_failing_rank == 5
    assert _diag(tmp_path, HOROVOD_GLOO).first_failing_rank == 2


@pytest.mark.parametrize(("line", "rank", "text"), [
    # det trial logs: [UTC time] <container id, 8 hex> [rank=N] || <line> (corpus dev n7-004's shape)
    ("[2024-02-27T21:35:28.726901Z] fa88a9df [rank=2] || Traceback (most recent call last):", 2,
     "Traceback (most recent call last):"),
    # the web UI's copy with an empty container (corpus dev n57a-012's shape)
    ("[] [rank=0] RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB", 0,
     "RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB"),
])
def test_determined_trial_log_prefix_gives_the_rank_and_is_stripped(line: str, rank: int, text: str) -> None:
    att = attribute(line, detect_prefixes([line]))
    assert (att.rank, att.text) == (rank, text)


def test_determined_prefix_needs_its_container_field() -> None:
    """Counter-examples: an application's own dated record and a script's ``[rank=N]`` are not Determined's prefix
    (the first names no rank; the second keeps its text, its rank read from the body)."""
    line = "[2024-02-27T21:35:28Z] INFO starting [rank=1] step 3"
    assert attribute(line, detect_prefixes([line])).text == line
    line = "[rank=1] step 3 loss 0.2"
    att = attribute(line, detect_prefixes([line]))
    assert att.rank == 1 and att.text == line


def test_a_one_line_determined_oom_names_its_rank(tmp_path: Path) -> None:
    """Corpus dev n57a-012 (a Lightning trial on Determined, one pasted line): the OOM is rank 0's."""
    d = _diag(tmp_path, "[] [rank=0] RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB (GPU 0; 7.93 GiB "
                        "total capacity; 4.71 GiB already allocated; 362.38 MiB free; 5.77 GiB reserved in total by "
                        "PyTorch)\n")
    assert d.category.value == "gpu_oom" and d.first_failing_rank == 0


def test_a_ci_jobs_role_prefix_before_torchruns_tee_is_stripped() -> None:
    """Corpus dev n42d-005 (Megatron-LM's CI log): a collector's stamp, the job's ``4-task-1-0/0`` replica prefix
    (TorchX's ``{role}/{replica}`` shape, but a role starting with a digit), then ``[default7]:[rank7]:``."""
    lines = [f"2026-04-03T12:16:00.52236{i}Z 4-task-1-0/0 [default7]:[rank7]: {t}" for i, t in enumerate(
        ["Traceback (most recent call last): (RANK 7)", '  File "/usr/local/lib/python3.12/x.py", line 193, in f'])]
    att = attribute(lines[0], detect_prefixes(lines))
    assert att.rank == 7 and att.local_rank == 7 and att.text == "Traceback (most recent call last): (RANK 7)"
    line = "4-task-1-0/0 is the job"  # no torchrun prefix after it: not a replica prefix
    assert attribute(line, detect_prefixes([line])).text == line
