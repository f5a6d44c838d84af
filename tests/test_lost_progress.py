"""A restart's lost training is the work since the last checkpoint save the logs show, not a constant.

The logs follow the layout of a torchrun job with Python logging (``[default0]:[2026-12-04 19:10:35,920][rank 0][INFO]``,
the zoo's ``long_st_ckpt_fills_disk`` run) and of HF Trainer's save line; the failure is a CUDA OOM traceback or
a disk that fills during a save.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.domain import RecoveryLevel
from diag_service.pipeline import DiagnoseRequest, diagnose


def _line(hms: str, rank: int, text: str) -> str:
    return f"[default{rank}]:[2026-12-04 {hms},000][rank {rank}][INFO] {text}\n"


def _steps(start_min: int, end_min: int, first_step: int) -> str:
    """Both ranks' step lines, one a minute from 10:<start_min> to 10:<end_min> (inclusive)."""
    out = []
    for i, m in enumerate(range(start_min, end_min + 1)):
        for r in (0, 1):
            out.append(_line(f"10:{m:02d}:00", r, f"step {first_step + 10 * i} loss 2.{i % 10}1 elapsed {60 * m}s"))
    return "".join(out)


OOM = (
    "[default1]:Traceback (most recent call last):\n"
    '[default1]:  File "/home/user/proj/train.py", line 88, in <module>\n'
    "[default1]:    loss.backward()\n"
    "[default1]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
    "79.15 GiB of which 1.21 GiB is free. Process 4121 has 77.93 GiB memory in use.\n"
    "E1204 10:48:03.211000 4100 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 1 "
    "(pid: 4121) of binary: /usr/bin/python3\n"
)


def _run(tmp_path: Path, text: str) -> object:
    d = tmp_path / "job"
    d.mkdir()
    (d / "console.log").write_text(text)
    return diagnose(DiagnoseRequest(path=str(d), job_id="job-7", recovery=True))


def test_a_restart_loses_the_training_since_the_last_save(tmp_path: Path) -> None:
    text = (_steps(0, 20, 0) + _line("10:20:30", 0, "saved /mnt/nfs/ckpt/exp7/step_000200.pt (6.0 MB)")
            + _steps(21, 47, 210) + OOM)
    d = _run(tmp_path, text)
    assert d.category.value == "gpu_oom"
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 200
    assert d.last_checkpoint.timestamp.startswith("2026-12-04T10:20:30")
    # from the save to the last step line before the failure (10:47:00), not to the agent's report at 10:48
    assert d.last_checkpoint.before_failure_s == 26 * 60 + 30
    l2 = next(o.lost for o in d.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis == "logs" and l2.lost_progress_s == 26 * 60 + 30


def test_a_save_begun_when_the_disk_filled_is_not_the_checkpoint_to_resume_from(tmp_path: Path) -> None:
    text = (_steps(0, 20, 0) + _line("10:20:30", 0, "saved /mnt/nfs/ckpt/exp7/step_000200.pt (6.0 MB)")
            + _steps(21, 40, 210)
            + _line("10:40:10", 0, "Saving model checkpoint to /mnt/nfs/ckpt/exp7/checkpoint-400")
            + "[default0]:OSError: [Errno 28] No space left on device\n")
    d = _run(tmp_path, text)
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 200
    assert d.last_checkpoint.before_failure_s == 19 * 60 + 30  # 10:20:30 to the last step line, 10:40:00
    # a save begun and followed by more training was written: it is the one to resume from
    text2 = (_steps(0, 20, 0) + _line("10:20:30", 0, "Saving model checkpoint to /mnt/nfs/ckpt/exp7/checkpoint-200")
             + _steps(21, 47, 210) + OOM)
    (tmp_path / "b").mkdir()
    d2 = _run(tmp_path / "b", text2)
    assert d2.last_checkpoint is not None and d2.last_checkpoint.step == 200


def test_without_a_save_in_the_logs_the_policy_interval_is_said_to_be_assumed(tmp_path: Path) -> None:
    d = _run(tmp_path, _steps(0, 47, 0) + OOM)
    assert d.last_checkpoint is None
    l2 = next(o.lost for o in d.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis == "policy" and l2.lost_progress_s == 1800
    # a resume line is no save of this run, but it is the checkpoint a restart goes back to when nothing was saved
    # after it (a new user's trial: six hours of steps after the resume, and the report assumed 30 min)
    (tmp_path / "r").mkdir()
    d2 = _run(tmp_path / "r", _line("09:59:00", 0, "Resuming from checkpoint saved at step 500") + _steps(0, 47, 500)
              + OOM)
    assert d2.last_checkpoint is not None and d2.last_checkpoint.kind == "resumed" and d2.last_checkpoint.step == 500
    assert d2.last_checkpoint.before_failure_s == 48 * 60  # 09:59:00 to the last step line, 10:47:00
    # HF's model loading bar names no step: no checkpoint
    (tmp_path / "h").mkdir()
    d3 = _run(tmp_path / "h", _line("09:59:00", 0, "Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00]")
              + _steps(0, 47, 0) + OOM)
    assert d3.last_checkpoint is None


def test_the_literal_scan_and_re2_find_the_same_last_save(monkeypatch) -> None:
    """On ASCII blocks after the first bytes the save words come from the literal scan's marks; before, from RE2:
    both find the same saves (a done one and a begun one)."""
    import pytest

    from diag_service.contracts import ProgressLog
    from diag_service.extract import events as ev
    from diag_service.extract import extract_events
    from diag_service.ingest import Block, Source

    pytest.importorskip("hyperscan")
    text = (_steps(0, 20, 0) + _line("10:20:30", 0, "saved /mnt/nfs/ckpt/exp7/step_000200.pt (6.0 MB)")
            + _steps(21, 30, 210) + _line("10:30:30", 0, "Saving model checkpoint to /mnt/nfs/ckpt/exp7/checkpoint-300")
            + _steps(31, 47, 310) + OOM)
    src = Source(path="console.log", prefixes=frozenset({"role"}))

    def run() -> ProgressLog:
        progress = ProgressLog()
        block = Block(source=src, data=text.encode(), first_line=1, ascii=True, newlines=text.count("\n"))
        list(extract_events([block], progress, ()))
        return progress

    import re2

    words = ev.SAVE_WORD_FAST
    monkeypatch.setattr(ev, "SAVE_WORD_FAST", re2.compile("x^"))  # the marks alone must find them
    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1)
    scanned = run()
    monkeypatch.setattr(ev, "SAVE_WORD_FAST", words)
    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1 << 60)
    by_re2 = run()
    assert sorted(scanned.saves) == sorted(by_re2.saves)
    assert [(s[1], s[3]) for s in sorted(scanned.saves)] == [(200, "saved"), (300, "begun")]


def test_the_save_is_the_last_one_before_the_failure_and_an_untimed_failure_ends_at_the_last_step(tmp_path: Path) -> None:
    """A save logged after the first error is not the checkpoint (a new user's trial: rank 0 saved step 300 after rank
    1's illegal memory access); the last one before the failure is. A failure line without a time (a torchrun --log-dir
    tree's stderr) ends the job at its last step line, not at an unknown time."""
    text = (_steps(0, 10, 0) + _line("10:10:03", 0, "saved /ckpt/step_000200.pt") + _steps(11, 20, 110)
            + _line("10:20:00", 1, "RuntimeError: CUDA error: an illegal memory access was encountered")
            + _line("10:20:30", 0, "saved /ckpt/step_000300.pt"))
    d = _run(tmp_path, text)
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 200
    assert d.last_checkpoint.before_failure_s == 9 * 60 + 57  # 10:10:03 to the last step line, 10:20:00
    untimed = _steps(0, 10, 0) + _line("10:10:03", 0, "saved /ckpt/step_000200.pt") + _steps(11, 25, 110) + OOM.split(
        "E1204")[0]
    (tmp_path / "u").mkdir()
    d2 = _run(tmp_path / "u", untimed)
    assert d2.last_checkpoint is not None and d2.last_checkpoint.before_failure_s == 14 * 60 + 57
    l2 = next(o.lost for o in d2.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis == "logs" and l2.lost_progress_s == 14 * 60 + 57


def test_a_save_line_without_a_time_takes_its_writers_last_earlier_time(tmp_path: Path) -> None:
    """A bare ``saved /ckpt/step_000200.pt`` printed between logging calls (a new user's trial) is dated by the line
    above it, a lower bound that the report words as "at or after"; the lost training is then an upper bound."""
    text = (_steps(0, 10, 0) + "saved /ckpt/step_000200.pt\n" + _steps(11, 25, 110) + OOM)
    d = _run(tmp_path, text)
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 200
    assert d.last_checkpoint.timestamp_approx is True
    assert d.last_checkpoint.timestamp.startswith("2026-12-04T10:10:00")
    l2 = next(o.lost for o in d.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis == "logs" and l2.lost_progress_s == d.last_checkpoint.before_failure_s
    # a save with its own time is not approximate
    (tmp_path / "t").mkdir()
    timed = _run(tmp_path / "t", _steps(0, 10, 0) + _line("10:10:03", 0, "saved /ckpt/step_000200.pt")
                 + _steps(11, 25, 110) + OOM)
    assert timed.last_checkpoint is not None and timed.last_checkpoint.timestamp_approx is False


def test_a_save_reported_done_right_before_the_disk_filled_is_not_counted(tmp_path: Path) -> None:
    """A ``saved`` line and then No space left on device before any further step (a new user's trial: "less than a
    minute" lost while the fix hint said the last checkpoint may be partial): the previous save is the one to resume
    from, and the report says why the later one is passed over. After an OOM the same save counts."""
    text = (_steps(0, 20, 0) + _line("10:20:30", 0, "saved /ckpt/step_000200.pt") + _steps(21, 40, 210)
            + _line("10:40:01", 0, "saved /ckpt/step_000400.pt")
            + "[default0]:OSError: [Errno 28] No space left on device\n")
    d = _run(tmp_path, text)
    assert d.category.value == "storage"
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 200
    assert d.last_checkpoint.unsure_step == 400 and d.last_checkpoint.unsure_timestamp.startswith("2026-12-04T10:40:01")
    from io import StringIO

    from rich.console import Console

    from diag_service.cli.report import render_recovery

    out = StringIO()
    render_recovery(d.recovery, Console(file=out, width=300), checkpoint=d.last_checkpoint)
    assert "the save of step 400 at 2026-12-04 10:40:01 is not counted" in out.getvalue()
    (tmp_path / "oom").mkdir()
    d2 = _run(tmp_path / "oom", _steps(0, 40, 0) + _line("10:40:00", 0, "saved /ckpt/step_000400.pt") + OOM)
    assert d2.last_checkpoint is not None and d2.last_checkpoint.step == 400 and d2.last_checkpoint.unsure_step is None


def test_a_failure_line_dated_only_by_an_early_line_does_not_hide_later_saves(tmp_path: Path) -> None:
    """The failing rank's traceback has no time and its writer's last timed line is hours earlier (a new user's
    trial, DeepSpeed): that borrowed time is a lower bound, so the saves and steps logged after it still count."""
    text = (_line("07:00:05", 1, "initialised")
            + "".join(_line(f"08:{m:02d}:00", 0, f"step {100 * m} loss 2.{m % 10}1") for m in range(0, 11, 2))
            + _line("08:10:30", 0, "saved /ckpt/step_001000.pt")
            + "".join(_line(f"08:{m:02d}:00", 0, f"step {100 * m} loss 2.{m % 10}1") for m in range(12, 45, 2))
            + OOM.split("E1204")[0])
    d = _run(tmp_path, text)
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 1000
    assert d.last_checkpoint.before_failure_s == 33 * 60 + 30  # 08:10:30 to the last step line, 08:44:00
    assert d.root_cause.evidence[0].timestamp_approx  # the traceback's time is rank 1's 07:00:05, a lower bound


def test_a_save_line_dated_by_its_collectors_stamp_keeps_that_time(tmp_path: Path) -> None:
    """kubectl logs --timestamps puts an RFC 3339 stamp in front of each line; a save line whose own time has no
    date (``INFO 12-01 11:31:02 train.py:140]``) is dated by it, not by an earlier line (a new user's trial)."""
    lines = [f"2026-12-01T11:{m:02d}:00.000000000Z INFO 12-01 11:{m:02d}:00 train.py:120] iteration {100 * m} loss 2.1\n"
             for m in range(20, 31)]
    lines.insert(-1, "2026-12-01T11:29:30.000000000Z INFO 12-01 11:29:30 train.py:140] successfully saved checkpoint "
                     "at iteration 2900 to /ckpt/llm\n")
    lines.append("2026-12-01T11:35:00.000000000Z RuntimeError: CUDA error: an illegal memory access was encountered\n")
    d = _run(tmp_path, "".join(lines))
    assert d.last_checkpoint is not None and d.last_checkpoint.step == 2900
    assert d.last_checkpoint.timestamp.startswith("2026-12-01T11:29:30") and not d.last_checkpoint.timestamp_approx


def test_a_job_that_failed_in_set_up_loses_no_training(tmp_path: Path) -> None:
    """The rule that decides on "no training step before the failure" (failed_before_training) hands the job over
    because it failed in set-up: a restart then loses no training, not half the policy's checkpoint interval."""
    tb = ('Traceback (most recent call last):\n  File "/opt/venv/lib/python3.11/site-packages/foo/run.py", '
          'line 3, in main\nfoo.errors.FooError: something went wrong\n')
    start = ("W1201 11:00:00.100000 4242 torch/distributed/run.py:793] *****\n"
             "W1201 11:00:00.100000 4242 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable\n"
             "Loading dataset from /data/train\nBuilding the model\n")
    d = _run(tmp_path, start + tb)
    assert d.trained is False and d.recovery.rule_id == "failed_before_training"
    l2 = next(o.lost for o in d.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis == "no_training" and l2.lost_progress_s == 0.0
    # the traceback pasted alone (3 lines) is an excerpt: the same hand-off, without claiming no training was lost
    (tmp_path / "excerpt").mkdir()
    d = _run(tmp_path / "excerpt", tb)
    assert d.recovery.rule_id == "failed_before_training_excerpt" and d.recovery.level is RecoveryLevel.L4
    l2 = next(o.lost for o in d.recovery.options if o.level is RecoveryLevel.L2)
    assert l2.lost_progress_basis != "no_training"
