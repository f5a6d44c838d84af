"""Lab runs watched live (``diag lab run|suite --watch``): a local ``diag serve`` and one ``diag watch``
agent per simulated node, wrapped around that node's torchrun, and ``live.json`` in the run folder.

``live.json`` (unix seconds; null when it never happened)::

    {"job_id", "onset_time", "detected_time", "slow_detected_time", "first_diagnosis_time",
     "final_diagnosis_time", "detect_delay_s", "slow_detect_delay_s", "first_diagnosis_delay_s",
     "final_diagnosis_delay_s",
     "status", "provisional", "agents", "diagnosis": <the live diagnosis, as diag diagnose --json>}

``onset_time`` is the lab's truth (the first faulty step, or the run's start); ``detected_time`` the
agents' first failure or hang event, ``slow_detected_time`` the service's first fail-slow alarm; the
diagnosis times are the service's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

#: The agents' settings in the lab (seconds): a hang is no step for max(5 s, 10 x p99 step interval),
#: stack samples every 2 s while it lasts; heartbeats every 2 s.
HANG_FLOOR_S = 5.0
STACK_EVERY_S = 2.0
HEARTBEAT_S = 2.0
#: The service's live settings in the lab: diagnose 0.3 s after new evidence, final 3 s after the job ended.
LIVE_SETTINGS = {"debounce_s": 0.3, "settle_s": 3.0, "heartbeat_s": HEARTBEAT_S}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveService:
    """A ``diag serve`` on loopback for the lab's agents, started on enter and stopped on exit."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LiveService:
        self.start()
        return self

    def start(self) -> None:
        """Start ``diag serve`` on :attr:`port` over :attr:`data_dir` and wait (60 s at most) until it answers
        ``/healthz``; also after :meth:`kill`, on the same port and data, as a restarted service. Raises
        ``RuntimeError`` when it exits or does not answer in time."""
        import httpx

        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "settings.json"
        # no summary model or retrieval: the live diagnosis is compared with `diag diagnose --no-kb --no-llm`
        cfg.write_text(json.dumps({"live": LIVE_SETTINGS, "llm": False, "kb_enabled": False}))
        log = open(self.data_dir / "serve.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "diag_service.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(self.data_dir), "--config", str(cfg), "--log-level", "warning"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"diag serve exited with {self.proc.returncode}; see {self.data_dir / 'serve.log'}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"diag serve did not answer on {self.url} within 60 s")

    def kill(self) -> None:
        """End the service at once (SIGKILL, no shutdown: what a crash or an OOM kill does) and wait for it;
        :meth:`start` brings it back on the same port and data folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def job_id(self, run_name: str) -> str:
        """A job id for one run, unique across the suites that share this service."""
        return f"lab-{run_name}-{uuid.uuid4().hex[:6]}"

    def agent_cmd(self, job_id: str, node: str, log_dir: Path, state_dir: Path, feed_dir: Path,
                  fr_dir: Path | None = None) -> list[str]:
        """The ``diag watch`` prefix of one node's launcher command (the command follows ``--``); ``feed_dir``:
        where the ranks write their timing parts (each agent sends its own node's records)."""
        return [sys.executable, "-m", "diag_service.cli", "watch", "--job-id", job_id, "--service", self.url,
                "--node", node, "--log-dir", str(log_dir), "--state-dir", str(state_dir), "--feed-dir", str(feed_dir),
                "--hang-floor", str(HANG_FLOOR_S), "--stack-every", str(STACK_EVERY_S),
                "--heartbeat", str(HEARTBEAT_S), "--log-file", str(state_dir / "agent.log"),
                *(["--fr-dir", str(fr_dir)] if fr_dir is not None else []), "--"]

    def collect(self, job_id: str, onset_time: float | None, out_dir: Path, wait_s: float = 30.0) -> dict[str, Any]:
        """Wait (at most ``wait_s``) for the job's final diagnosis and write ``out_dir/live.json``."""
        import httpx

        view: dict[str, Any] = {}
        deadline = time.time() + wait_s
        while True:
            try:
                r = httpx.get(f"{self.url}/v1/live/jobs/{job_id}", timeout=5.0)
                view = r.json() if r.status_code == 200 else {}
            except (httpx.HTTPError, ValueError):
                view = {}
            if view.get("final_diagnosis_time") is not None and not view.get("diagnosis_pending"):
                break
            if time.time() > deadline:
                break
            time.sleep(0.5)
        diagnosis = None
        if view.get("diagnosis_id"):
            try:
                r = httpx.get(f"{self.url}/v1/diagnoses/{view['diagnosis_id']}", timeout=5.0)
                body = r.json() if r.status_code == 200 else {}
                diagnosis = body.get("diagnosis", body) if isinstance(body, dict) else None
            except (httpx.HTTPError, ValueError):
                diagnosis = None

        def delay(t: Any) -> float | None:
            return round(float(t) - onset_time, 3) if t is not None and onset_time is not None else None

        live = {
            "job_id": job_id,
            "onset_time": onset_time,
            "detected_time": view.get("detected_time"),
            "slow_detected_time": view.get("slow_detected_time"),
            "first_diagnosis_time": view.get("first_diagnosis_time"),
            "final_diagnosis_time": view.get("final_diagnosis_time"),
            "detect_delay_s": delay(view.get("detected_time")),
            "slow_detect_delay_s": delay(view.get("slow_detected_time")),
            "first_diagnosis_delay_s": delay(view.get("first_diagnosis_time")),
            "final_diagnosis_delay_s": delay(view.get("final_diagnosis_time")),
            "status": view.get("status"),
            "provisional": view.get("provisional"),
            "agents": [{k: a.get(k) for k in ("node", "last_seq", "ended", "stale")} for a in view.get("agents", [])],
            "diagnosis": diagnosis,
        }
        tmp = out_dir / "live.json.tmp"
        tmp.write_text(json.dumps(live, indent=2) + "\n")
        os.replace(tmp, out_dir / "live.json")
        return live


__all__ = ["HANG_FLOOR_S", "LiveService", "free_port"]
