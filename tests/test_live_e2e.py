"""An agent and a real `diag serve` (issue 22): the service is killed while the job runs and comes back;
nothing the agent saw is lost or applied twice."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from diag_service.lab.live import LiveService
from diag_service.live.agent import Agent, WatchSettings
from diag_service.live.spool import http_sender

FIX = Path(__file__).parent / "fixtures"


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _wait(cond, timeout: float = 30.0) -> bool:  # noqa: ANN001
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.timeout(180)
def test_a_service_outage_loses_no_line_and_applies_nothing_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("diag_service.live.spool.BACKOFF_S", (0.1, 0.5))
    console = (FIX / "lab_sigkill_root_cause_wrong" / "console_node0.log").read_text().splitlines(keepends=True)
    half = len(console) // 2
    data = tmp_path / "service"
    first = LiveService(data)
    with first:
        url = first.url
        logs = tmp_path / "logs"
        logs.mkdir()
        cfg = WatchSettings(job_id="job-outage", node="node0", log_dir=logs, state_dir=tmp_path / "agent",
                            poll_s=0.1, batch_s=0.2, heartbeat_s=1.0)
        agent = Agent(cfg, http_sender(url, cfg.job_id, None, timeout_s=2.0), stack_dumper=lambda pid: ("py-spy", ""))
        runner = threading.Thread(target=agent.run, daemon=True)
        runner.start()
        _append(logs / "console.log", "".join(console[:half]))
        assert _wait(lambda: not agent.spool.pending() and agent.sender is not None and agent.sender.sent > 0)
        assert first.proc is not None
        os.killpg(first.proc.pid, signal.SIGKILL)  # the service dies without a word
        first.proc.wait()
        _append(logs / "console.log", "".join(console[half:]))  # the failure happens meanwhile
        assert _wait(lambda: len(agent.spool.pending()) > 0, 10)
        time.sleep(2.0)
    with LiveService(data, port=first.port):  # back on the same port and data
        assert _wait(lambda: not agent.spool.pending(), 60), agent.sender.last_error if agent.sender else None
        agent.stop()
        runner.join(timeout=60)
        view = httpx.get(f"{url}/v1/live/jobs/job-outage", timeout=5).json()
    folder = next((data / "live").iterdir())
    stored = (folder / "node0" / "logs" / "console.log").read_text()
    assert stored == "".join(console)  # every line once, in order
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events].count("failure") == 1
    assert view["status"] == "failed" and view["agents"][0]["last_seq"] == agent.seq - 1
