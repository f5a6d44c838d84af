"""Fast checks of the lab's scenario files, suite planning and dump parsing (no torch processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from diag_service.lab.cli import app
from diag_service.lab.dumps import main_thread_frames, parse_faulthandler
from diag_service.lab.runner import plan_suite
from diag_service.lab.scenarios import DEFAULT_SCENARIO_DIR, Scenario, load_scenario, load_scenarios

REQUIRED_KINDS = {
    "exception",
    "sigkill",
    "checkpoint_write",
    "nan_loss",
    "dataloader_worker_killed",
    "rendezvous_port_in_use",
    "hang_sleep",
    "data_block",
    "collective_mismatch",
    "lock_deadlock",
    "slow_compute",
    "slow_comm",
    "none",
}


def test_every_scenario_file_loads_and_covers_the_issue() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 18
    assert {s.fault.kind for s in scenarios.values()} >= REQUIRED_KINDS
    modes = {str(s.failure_mode) for s in scenarios.values()}
    assert modes == {"fail_stop", "fail_hang", "fail_slow"}
    errors = {s.fault.error for s in scenarios.values() if s.fault.kind == "exception"}  # type: ignore[union-attr]
    assert errors == {"shape_mismatch", "key_error", "import_error"}
    for s in scenarios.values():
        assert s.timeouts.collective_s < s.timeouts.run_s
        if s.failure_mode == "fail_hang":
            assert s.wants_dumps


def test_invalid_scenarios_are_rejected(tmp_path: Path) -> None:
    base = yaml.safe_load((DEFAULT_SCENARIO_DIR / "hang_sleep_before_allreduce.yaml").read_text())
    with pytest.raises(ValidationError):
        Scenario.model_validate({**base, "category": "cosmic_rays"})
    with pytest.raises(ValidationError):
        Scenario.model_validate({**base, "fault": {"kind": "hang_sleep", "bogus": 1}})
    with pytest.raises(ValidationError):
        Scenario.model_validate({**base, "onset_step": base["steps"]})
    with pytest.raises(ValidationError):
        Scenario.model_validate({**base, "faulty_rank": None})
    with pytest.raises(ValidationError):
        Scenario.model_validate({**base, "ranks": 3, "nodes": 2})
    bad = tmp_path / "other_name.yaml"
    bad.write_text(yaml.safe_dump(base))
    with pytest.raises(ValueError, match="differs from the file name"):
        load_scenario(bad)


def test_suite_plan_is_seeded_and_in_range() -> None:
    scenarios = load_scenarios()
    a = plan_suite(scenarios, 25, seed=3)
    assert a == plan_suite(scenarios, 25, seed=3)
    assert len({i.scenario for i in a}) == min(25, len(scenarios))
    for item in a:
        sc = scenarios[item.scenario]
        assert 0 <= item.onset_step < sc.steps
        if sc.fault_is_per_rank:
            assert item.faulty_rank is not None and 0 <= item.faulty_rank < item.ranks
        else:
            assert item.faulty_rank is None


FH_TEXT = """Thread 0x00007f0000000002 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
  File "/work/train.py", line 197 in _run

Current thread 0x00007f0000000001 (most recent call first):
  File "/work/train.py", line 266 in _refresh_lease
  File "/work/train.py", line 419 in main
  File "/work/train.py", line 484 in <module>
"""


def test_faulthandler_text_parses_to_pyspy_schema() -> None:
    threads = parse_faulthandler(FH_TEXT, pid=42)
    assert [len(t["frames"]) for t in threads] == [2, 3]
    assert threads[1]["current"] and threads[1]["pid"] == 42
    assert threads[1]["frames"][0] == {
        "name": "_refresh_lease",
        "filename": "/work/train.py",
        "module": None,
        "short_filename": "train.py",
        "line": 266,
        "locals": None,
    }
    assert main_thread_frames(threads) == ["_refresh_lease", "main", "<module>"]


def test_cli_lists_scenarios() -> None:
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert "hang_collective_mismatch" in result.output
    assert "slow_control_clean" in result.output


def test_cli_list_has_a_header_and_lists_control_runs_apart_from_the_faults() -> None:
    lines = CliRunner().invoke(app, ["list"]).output.splitlines()
    assert lines[0].split() == ["SCENARIO", "FAILURE", "MODE", "CATEGORY", "FAULT"]
    controls = {name for name, sc in load_scenarios().items() if sc.fault.kind == "none"}
    assert controls, "the catalogue has control runs"
    start = next(i for i, ln in enumerate(lines) if ln.startswith("control runs"))
    listed = [ln.split()[0] for ln in lines[start + 1:]]
    assert set(listed) == controls  # every control in its own group, nothing else in it
    before = {ln.split()[0] for ln in lines[1:start] if ln.startswith("  ")}
    assert not before & controls and len(before) == len(load_scenarios()) - len(controls)


def test_subgroup_hang_needs_tensor_parallel_groups() -> None:
    doc = yaml.safe_load((DEFAULT_SCENARIO_DIR / "hang_subgroup_sleep.yaml").read_text())
    assert Scenario(**doc).tp_size == 2
    with pytest.raises(ValidationError, match="tp_size"):
        Scenario(**{**doc, "tp_size": 1})
    with pytest.raises(ValidationError, match="multiple of tp_size"):
        Scenario(**{**doc, "ranks": 3, "nodes": 1})
