"""The lab behind its extra, and the runner's process tree (psutil): without torch, ``diag lab run`` and
``diag lab suite`` say which extra to install instead of launching anything; ending a run's tree ends
every descendant, one in a session of its own too, and keeps the agent's exit code."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from diag_service.cli import app
from diag_service.errors import ErrorKind, exit_code
from diag_service.lab import LabUnavailable
from diag_service.lab.runner import ProcessTracker, run_suite
from diag_service.lab.scenarios import load_scenarios


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without torch: ``import torch`` fails and ``find_spec('torch')`` is None."""
    monkeypatch.setitem(sys.modules, "torch", None)


@pytest.mark.parametrize("args", [["suite", "--runs", "1"], ["run", "stop_shape_mismatch"]])
def test_lab_without_torch_names_the_extra_and_runs_nothing(no_torch: None, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "suite"
    result = CliRunner().invoke(app, ["lab", *args, "--out", str(out)])
    assert result.exit_code == exit_code(LabUnavailable()) == 5, result.output
    assert "diag-service[lab]" in result.output and "missing: torch" in result.output
    assert not out.exists()


def test_run_suite_without_torch_is_unavailable_not_a_row_per_run(no_torch: None, tmp_path: Path) -> None:
    with pytest.raises(LabUnavailable) as info:
        run_suite(load_scenarios(), tmp_path / "suite", runs=2)
    assert info.value.kind == ErrorKind.UNAVAILABLE
    assert not (tmp_path / "suite").exists()


#: An agent-like process: starts a worker in the same group and a helper in a session of its own (out of
#: reach of a group kill), prints both PIDs, then waits.
_AGENT = """
import subprocess, sys, time
sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
a = subprocess.Popen(sleep)
b = subprocess.Popen(sleep, start_new_session=True)
print(a.pid, b.pid, flush=True)
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_terminate_all_ends_every_descendant_and_keeps_the_agent_exit_code() -> None:
    agent = subprocess.Popen([sys.executable, "-c", _AGENT], stdout=subprocess.PIPE, start_new_session=True)
    tracker = ProcessTracker()
    tracker.add_root(agent)
    try:
        assert agent.stdout is not None
        worker, helper = (int(x) for x in agent.stdout.readline().split())
        tracker.refresh()
        assert {agent.pid, worker, helper} <= set(tracker.alive())
    finally:
        tracker.terminate_all(grace_s=10.0)
    assert agent.poll() == -signal.SIGTERM  # reaped through its Popen, not by the tracker
    deadline = time.time() + 10  # the helper is not our child: init reaps it
    while time.time() < deadline and not (_gone(worker) and _gone(helper)):
        time.sleep(0.1)
    assert _gone(worker) and _gone(helper)
    assert tracker.alive() == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_run_that_breaks_while_watching_leaves_no_process_and_no_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in agents (no torch job): the runner's own error path is under test, not torchrun.
    import diag_service.lab.runner as runner

    monkeypatch.setattr(runner, "_torchrun_cmd", lambda: [sys.executable, "-c", "import time; time.sleep(120)"])
    agents: list[subprocess.Popen[bytes]] = []
    real_add_root = runner.ProcessTracker.add_root

    def add_root(self: ProcessTracker, proc: subprocess.Popen[bytes]) -> None:
        agents.append(proc)
        real_add_root(self, proc)

    def broken_poll(self: object) -> bool:
        raise RuntimeError("monitor failed")

    monkeypatch.setattr(runner.ProcessTracker, "add_root", add_root)
    monkeypatch.setattr(runner._Monitor, "poll", broken_poll)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="monitor failed"):
        runner.run_scenario(load_scenarios()["stop_import_error"], out, ranks=2, nodes=2)
    assert len(agents) == 2 and all(a.poll() == -signal.SIGTERM for a in agents)
    assert not (out / ".lab").exists()  # the work folder holds the ground truth: removed on errors too
    assert (out / "console_node0.log").is_file() and not (out / "run.json").exists()


@pytest.mark.parametrize(
    ("name", "silent_s", "hang"),
    [
        ("clean_ckpt_eval", 12.0, False),  # inside the run's own 8 s save + 10 s evaluation: not a hang
        ("clean_ckpt_eval", 22.0, True),  # longer than 3 s plus every pause the scenario plans
        ("hang_lock_deadlock", 3.5, True),  # plans no pause: the plain 3 s
    ],
)
def test_the_runner_hang_check_waits_out_the_pauses_its_scenario_plans(name: str, silent_s: float, hang: bool) -> None:
    from diag_service.lab.runner import _Monitor, _plan

    sc = load_scenarios()[name]
    mon = _Monitor.__new__(_Monitor)
    mon.plan = _plan(sc, None, None, 0, None, None)
    mon.sc = sc
    mon.hang_time = None
    mon.events = []
    mon.say = lambda _m: None
    snaps: list[str] = []
    mon.dumper = SimpleNamespace(count=9, snapshot=lambda _procs, why: snaps.append(why))  # type: ignore[assignment]
    mon.progress_ref = 1000.0
    mon.next_dump = 0.0
    mon.parts = Path("/nonexistent")
    mon._hang_and_dumps(1000.0 + silent_s, {}, stepping=True, all_up=False)
    assert [e["event"] for e in mon.events] == (["hang_detected"] if hang else [])


def test_a_pinned_plan_starts_each_node_torchrun_under_taskset(tmp_path: Path) -> None:
    from diag_service.lab.runner import _node_cmd, _plan

    plan = _plan(load_scenarios()["slow_control_clean"], None, None, 0, None, None)
    bare = _node_cmd(plan, 0, 29500, "r", tmp_path, tmp_path / "c.json")
    plan.job_cpus = (0, 2)
    pinned = _node_cmd(plan, 0, 29500, "r", tmp_path, tmp_path / "c.json")
    assert pinned == ["taskset", "--cpu-list", "0,2", *bare]
