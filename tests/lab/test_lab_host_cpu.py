"""The lab's host CPU sampler (``host_cpu.jsonl`` of fail-slow runs): what the run's own processes and
other work used, from ``/proc``. A busy child process must show up as the job's CPU, not as other work."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diag_service.lab.runner import HostCpuSampler, ProcessTracker

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs /proc")


def test_sampler_attributes_a_busy_child_to_the_job(tmp_path: Path) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<20: pass"],
                            start_new_session=True)
    tracker = ProcessTracker()
    tracker.add_root(busy)
    try:
        sampler = HostCpuSampler(tmp_path / "host_cpu.jsonl", tracker, interval_s=0.0)
        sampler.sample()
        deadline = time.time() + 10
        # sample until the child has used some CPU in an interval (it always does, however loaded the host)
        while time.time() < deadline and not any(r["job_cores"] > 0 for r in sampler.rows):
            time.sleep(0.3)
            sampler.sample()
    finally:
        busy.kill()
        busy.wait()
    sampler.write()
    rows = [json.loads(x) for x in (tmp_path / "host_cpu.jsonl").read_text().splitlines()]
    assert rows and set(rows[0]) == {"time", "host_busy_cores", "job_cores", "other_cores"}
    assert any(r["job_cores"] > 0 for r in rows)
    for r in rows:
        assert r["other_cores"] >= 0
        assert r["host_busy_cores"] >= 0


def test_sampler_writes_nothing_without_an_interval(tmp_path: Path) -> None:
    sampler = HostCpuSampler(tmp_path / "host_cpu.jsonl", ProcessTracker(), interval_s=60.0)
    sampler.sample()
    sampler.sample()  # within the interval: ignored
    sampler.write()
    assert not (tmp_path / "host_cpu.jsonl").exists()
