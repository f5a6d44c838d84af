"""A new user's trial of 2026-12-05 (session 7): answers an on-call engineer would have been misled by.

Each log is written the way the launcher and the frameworks print it (torchrun 2.x, Slurm, PyTorch's serialization).
"""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

CTRL_C = """$ torchrun --nproc-per-node 2 train.py
W1205 13:40:02.001000 150100 torch/distributed/run.py:793] *****************************************
[rank0]:step 10 loss 2.31
[rank1]:step 10 loss 2.30
^CW1205 13:58:47.882000 150100 torch/distributed/elastic/agent/server/api.py:704] Received 2 death signal, shutting down workers
W1205 13:58:47.883000 150100 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 150131 closing signal SIGINT
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/user/train.py", line 50, in main
[rank0]:     dist.all_reduce(t)
[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
[rank0]:     work.wait()
[rank0]: KeyboardInterrupt
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/user/train.py", line 50, in main
[rank1]:     dist.all_reduce(t)
[rank1]:   File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
[rank1]:     work.wait()
[rank1]: KeyboardInterrupt
torch.distributed.elastic.multiprocessing.api.SignalException: Process 150100 got signal: 2
"""

ENOSPC = """rank 0 epoch 0 step 10
rank 0 epoch 0 step 20
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/user/train.py", line 71, in save
[rank0]:     torch.save(state, "/mnt/ckpt/step_000020.pt")
[rank0]:   File "/usr/lib/python3.11/site-packages/torch/serialization.py", line 943, in save
[rank0]:     with _open_zipfile_writer(f) as opened_zipfile:
[rank0]: OSError: [Errno 28] No space left on device
"""

TIME_LIMIT = """0: [rank0]:step 9980 loss 1.71
0: [rank0]:step 9990 loss 1.70
slurmstepd: error: *** STEP 4412873.0 ON node-a17 CANCELLED AT 2026-12-05T11:59:00 DUE TO TIME LIMIT ***
srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
0: W1205 11:59:00.118000 88211 torch/distributed/elastic/agent/server/api.py:704] Received 15 death signal, shutting down workers
"""

SIGUSR1 = """+ srun torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint node-a17:29500 train.py
[rank0]:step 4820 loss 1.85 lr 2.0e-4
W1205 11:59:01.118000 88211 torch/distributed/elastic/agent/server/api.py:704] Received 10 death signal, shutting down workers
E1205 11:59:01.402000 88211 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -10) \
local_rank: 0 (pid: 88240) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-05_11:59:01
  host      : node-a17
  rank      : 1 (local_rank: 1)
  exitcode  : -10 (pid: 88241)  (SIGUSR1)
  error_file: <N/A>
  traceback : Signal 10 (SIGUSR1) received by PID 88241
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-05_11:59:01
  host      : node-a17
  rank      : 0 (local_rank: 0)
  exitcode  : -10 (pid: 88240)  (SIGUSR1)
  error_file: <N/A>
  traceback : Signal 10 (SIGUSR1) received by PID 88240
============================================================
"""


def _diag(tmp_path: Path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text)
    return diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))


def test_a_job_stopped_with_ctrl_c_is_said_to_be_interrupted_not_timed_out(tmp_path: Path) -> None:
    d = _diag(tmp_path, CTRL_C)
    assert d.failure_mode.value == "fail_hang"
    assert d.root_cause.summary.startswith("The job was interrupted: ")
    assert "timed out" not in d.root_cause.summary.split(":", 1)[1].split("no rank reported")[0]
    assert d.recovery is not None and d.recovery.rule_id == "interrupted_restart"
    assert "Kill" not in d.recovery.action  # it is already stopped
    # the terminal's "^C" echo does not hide the agent line's own time
    first = d.root_cause.evidence[0]
    assert "Received 2 death signal" in first.text and first.timestamp is not None
    assert str(first.timestamp).startswith("2026-12-05T13:58:47")


def test_a_full_volume_is_not_restarted_onto_itself(tmp_path: Path) -> None:
    d = _diag(tmp_path, ENOSPC)
    assert d.category.value == "storage" and d.trained is True
    assert d.recovery is not None and d.recovery.rule_id == "volume_full_free_space"
    assert d.recovery.level.value == "L4"


def test_a_time_limit_resumes_from_the_checkpoint(tmp_path: Path) -> None:
    d = _diag(tmp_path, TIME_LIMIT)
    assert d.recovery is not None and d.recovery.rule_id == "time_limit_resume"
    assert d.recovery.level.value == "L2"
    assert "would fail the same way" not in d.recovery.action


def test_one_signal_to_every_rank_singles_out_no_rank_or_node(tmp_path: Path) -> None:
    d = _diag(tmp_path, SIGUSR1)
    assert d.category.value == "infrastructure"
    assert d.first_failing_rank is None and d.faulty_nodes == []
    assert any("same signal in the same second" in f for f in d.findings)
    # one rank killed while the other was torn down with another signal: the table's root still names it
    one = SIGUSR1.replace("exitcode  : -10 (pid: 88241)  (SIGUSR1)", "exitcode  : -15 (pid: 88241)  (SIGTERM)")
    d = _diag(tmp_path, one.replace("Signal 10 (SIGUSR1) received by PID 88241", "Signal 15 (SIGTERM) received by PID 88241"))
    assert d.first_failing_rank == 0
