"""A collective timeout on a torchrun job whose ranks log progress as ``[time][rank N][INFO]``: the rank that logged
steps but never timed out is the one the others waited for, and a hang the watchdog already ended (exit -6) is not
"killed after stack dumps" but restarted with the Flight Recorder on."""

from __future__ import annotations

from pathlib import Path

from diag_service.domain import FailureMode
from diag_service.pipeline import DiagnoseRequest, diagnose


def _wd(rank: int, frac: str) -> str:
    return (f"[rank{rank}]:[E1204 10:38:00.{frac} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=50331648, NumelOut=50331648, "
            "Timeout(ms)=1200000) ran for 1200012 milliseconds before timing out.\n")


def _log(exited: bool) -> str:
    lines = [f"[2026-12-04 10:{m:02d}:00,00{r}][rank {r}][INFO] step {s} loss 1.9\n"
             for m, s in ((0, 100), (6, 200), (12, 300)) for r in range(4)]
    lines += [f"[2026-12-04 10:18:00,00{r}][rank {r}][INFO] step 400 loss 1.7\n" for r in range(3)]
    lines += [_wd(2, "123456789"), _wd(0, "223456789"), _wd(1, "323456789")]
    if exited:
        lines.append("[rank2]:[E1204 10:38:00.623456789 ProcessGroupNCCL.cpp:636] [Rank 2] To avoid data "
                     "inconsistency, we are taking the entire process down.\n")
        lines.append("E1204 10:38:05.000000 5511 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                     "(exitcode: -6) local_rank: 2 (pid: 5602) of binary: /usr/bin/python3\n")
    return "".join(lines)


def test_the_rank_that_logged_steps_but_never_timed_out_is_named(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_log(exited=True))
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.failure_mode is FailureMode.FAIL_HANG
    assert d.first_failing_rank == 3
    assert "[3]" in d.root_cause.summary


def test_a_hang_the_watchdog_ended_gets_a_restart_with_the_flight_recorder(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_log(exited=True))
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.recovery is not None and d.recovery.rule_id == "hang_ended_restart"
    assert "TORCH_FR_BUFFER_SIZE" in d.recovery.action and "Kill the hung job" not in d.recovery.action
    # the same timeouts with no process seen ending: the job may still hold its GPUs
    (tmp_path / "train.log").write_text(_log(exited=False))
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.failure_mode is FailureMode.FAIL_HANG
    assert d.recovery is not None and d.recovery.rule_id == "hang_restart"
    assert "stack dumps" in d.recovery.action


def test_the_watchdogs_own_fatal_line_ends_the_job_too(tmp_path: Path) -> None:
    """ProcessGroupNCCL's "[F...] Terminating the process after attempting to dump debug info" is the watchdog ending
    its process (before abort): with no launcher line at all, the hang has ended (a new user's trial, Slurm)."""
    text = _log(exited=False) + "".join(
        f"[rank{r}]:[F1204 10:38:00.70000000{r} ProcessGroupNCCL.cpp:1418] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
        "Terminating the process after attempting to dump debug info, due to collective timeout or exception.\n"
        for r in range(3))
    (tmp_path / "train.log").write_text(text)
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.failure_mode is FailureMode.FAIL_HANG and d.first_failing_rank == 3
    assert d.recovery is not None and d.recovery.rule_id == "hang_ended_restart"
