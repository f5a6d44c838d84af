"""Kill `diag label` with a real SIGKILL mid-run, twice, and restart it: no duplicate row, no missing row.

The run is a subprocess (``python -m diag_service.label``) in its own process group; when the
ledger shows it has committed some rows (and, the second time, written parts), the whole group
(driver and workers) gets SIGKILL, as when a node dies. A final run completes the output, which
must hold exactly one row per job, each equal to the row the same bundle gets in-process.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_label import DEV_LOGS, OFF, add_bad_jobs, add_dev_jobs, needs_dev, rows_by_id

from diag_service.label import Job, Labeller
from diag_service.label.ledger import LEDGER, SUCCESS

COPIES = 40  # 40 x 16 real logs + 4 bad bundles = 644 jobs: several seconds on one worker, so the kills land mid-run


def _ledger_state(out: Path) -> tuple[int, int, int]:
    """(jobs, labelled, complete parts), read without disturbing the writer; zeros until the ledger exists."""
    if not (out / LEDGER).exists():
        return 0, 0, 0
    try:
        db = sqlite3.connect(f"file:{out / LEDGER}?mode=ro", uri=True, timeout=1)
        try:
            total, done = db.execute("SELECT COUNT(*), COALESCE(SUM(state = 'done'), 0) FROM jobs").fetchone()
            parts = db.execute("SELECT COUNT(*) FROM parts WHERE state = 'done'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # tables not created yet
        return 0, 0, 0
    return int(total), int(done), int(parts)


def _start(archive: Path, out: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "diag_service.label", str(archive), "--out", str(out), "--kb", "off",
           "--workers", "1", "--batch-size", "4", "--part-rows", "40", "--no-progress"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _kill_when(proc: subprocess.Popen[bytes], out: Path, min_done: int, min_parts: int, timeout_s: float = 120) -> int:
    """SIGKILL the run's whole process group once the ledger has ``min_done`` rows and ``min_parts`` parts."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        total, done, parts = _ledger_state(out)
        if done >= min_done and parts >= min_parts:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
            assert done < total, "the run finished before it could be killed: make the archive larger"
            return done
        if proc.poll() is not None:
            pytest.fail(f"run ended before the kill (rc={proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the run made no progress")


@needs_dev
@pytest.mark.timeout(300)
def test_sigkill_twice_then_resume_gives_every_row_once(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    ids = add_dev_jobs(archive, copies=COPIES)
    add_bad_jobs(archive)
    out = tmp_path / "labels.parquet"

    first = _kill_when(_start(archive, out), out, min_done=40, min_parts=0)
    second = _kill_when(_start(archive, out), out, min_done=first + 120, min_parts=2)
    assert _ledger_state(out)[1] >= second > first
    assert not (out / SUCCESS).exists()

    final = subprocess.run([sys.executable, "-m", "diag_service.label", str(archive), "--out", str(out), "--kb", "off",
                            "--workers", "2", "--no-progress", "--json"], capture_output=True, timeout=240)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    assert (out / SUCCESS).exists()

    rows = rows_by_id(out)  # asserts no job id appears twice across parts
    assert set(rows) == set(ids) | {"bad-empty", "bad-emptydir", "bad-binary", "bad-trunc"}
    # Each row is what the same bundle gets in-process, wherever the kills fell.
    lab = Labeller(OFF)
    expected = {log.stem: lab.label(Job(job_id="x", path=str(archive / f"c000-{log.stem}"))).model_dump(mode="json")
                for log in DEV_LOGS}
    for jid in ids:
        got = dict(rows[jid])
        want = dict(expected[jid.split("-", 1)[1]])
        assert got.pop("job_id") == jid and got.pop("path") == str(archive / jid)
        want.pop("job_id"), want.pop("path")
        assert got == want, jid
    assert all(rows[b]["status"] == "error" for b in ("bad-empty", "bad-emptydir", "bad-binary", "bad-trunc"))
