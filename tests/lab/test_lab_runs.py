"""Real torchrun/gloo runs of a small subset of lab scenarios (2 ranks, CPU, about 2 minutes).

Each test runs one scenario end to end and asserts that the captured artifacts carry the fault:
the faulty rank's traceback is in its own torchrun stderr log (fail-stop), the hung rank's stack
differs from the others' (fail-hang, py-spy and the faulthandler fallback), and the straggler's
step compute times are longer in ``timing.jsonl`` (fail-slow). Every run must leave no process.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from diag_service.lab.dumps import main_thread_frames  # noqa: E402
from diag_service.lab.runner import RunResult, iter_rank_logs, run_scenario  # noqa: E402
from diag_service.lab.scenarios import Scenario, load_scenarios  # noqa: E402

TIMING_KEYS = {"rank", "node", "step", "start", "end", "compute_s", "comm_s", "data_s"}


def _scenario(name: str, **timeouts: float) -> Scenario:
    sc = load_scenarios()[name]
    if timeouts:
        sc = sc.model_copy(update={"timeouts": sc.timeouts.model_copy(update=timeouts)})
    return sc


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _leftover_processes(out_dir: Path) -> list[int]:
    """PIDs whose command line mentions ``out_dir`` (the lab's agents and ranks do)."""
    needle = str(out_dir).encode()
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in Path(entry.path, "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _stderr_text(out_dir: Path, rank: int) -> str:
    return "".join(p.read_text(errors="replace") for p in iter_rank_logs(out_dir, rank) if p.name == "stderr.log")


def _common_checks(res: RunResult) -> dict[str, Any]:
    out = res.out_dir
    assert not _leftover_processes(out), "processes outlived the run"
    assert not (out / ".lab").exists()
    truth = json.loads((out / "truth.json").read_text())
    for key in (
        "scenario",
        "failure_mode",
        "category",
        "faulty_rank",
        "faulty_node",
        "onset_step",
        "onset_time",
        "slowdown_factor",
    ):
        assert key in truth
    assert truth["fault_fired"]
    events = _jsonl(out / "events.jsonl")
    names = [e["event"] for e in events]
    assert names[:2] == ["submitted", "started"] and names[-1] == "finished"
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)
    timing = _jsonl(out / "timing.jsonl")
    assert timing and all(set(t) >= TIMING_KEYS for t in timing)
    ranks = json.loads((out / "dumps" / "ranks.json").read_text())
    assert truth["faulty_node"] == ranks[str(truth["faulty_rank"])]["node"]
    return truth


@pytest.mark.timeout(90)
def test_fail_stop_shape_mismatch_traceback_in_faulty_rank_log(tmp_path: Path) -> None:
    res = run_scenario(_scenario("stop_shape_mismatch"), tmp_path / "run", ranks=2, faulty_rank=1, onset_step=12)
    assert res.status == "failed"
    truth = _common_checks(res)
    assert truth["faulty_rank"] == 1 and truth["onset_step"] == 12
    faulty, healthy = _stderr_text(res.out_dir, 1), _stderr_text(res.out_dir, 0)
    assert "Traceback (most recent call last)" in faulty
    assert "mat1 and mat2 shapes cannot be multiplied" in faulty
    assert "mat1 and mat2" not in healthy
    timing = _jsonl(res.out_dir / "timing.jsonl")
    assert max(t["step"] for t in timing if t["rank"] == 1) == 11
    names = [e["event"] for e in _jsonl(res.out_dir / "events.jsonl")]
    assert {"first_step", "failure"} <= set(names)


@pytest.mark.timeout(90)
def test_fail_stop_two_nodes_import_error(tmp_path: Path) -> None:
    res = run_scenario(_scenario("stop_import_error"), tmp_path / "run", ranks=2, nodes=2, faulty_rank=1, onset_step=8)
    assert res.status == "failed" and set(res.exit_codes) == {"node0", "node1"}
    truth = _common_checks(res)
    out = res.out_dir
    ranks = json.loads((out / "dumps" / "ranks.json").read_text())
    assert {v["node"] for v in ranks.values()} == {"node0", "node1"}
    assert (out / "console_node0.log").is_file() and (out / "console_node1.log").is_file()
    assert list((out / "logs" / "node0").glob("*/attempt_0/0/stderr.log"))
    assert list((out / "logs" / "node1").glob("*/attempt_0/0/stderr.log"))
    assert "ModuleNotFoundError: No module named 'fused_optim_ext'" in _stderr_text(out, truth["faulty_rank"])
    assert "fused_optim_ext" not in _stderr_text(out, 0)
    nodes_in_timing = {(t["rank"], t["node"]) for t in _jsonl(out / "timing.jsonl")}
    assert nodes_in_timing == {(int(r), v["node"]) for r, v in ranks.items()}


def _hang_checks(res: RunResult, faulty: int, marker: str) -> None:
    out = res.out_dir
    assert res.hang_detected
    _common_checks(res)
    index = json.loads((out / "dumps" / "index.json").read_text())
    phases = [e["phase"] for e in index]
    assert phases.count("before_hang") == 2 and phases.count("during_hang") == 6, phases
    names = [e["event"] for e in _jsonl(out / "events.jsonl")]
    assert "hang_detected" in names
    for entry in index:
        snap = out / "dumps" / entry["dir"]
        assert sorted(p.name for p in snap.iterdir()) == ["rank-0.json", "rank-0.txt", "rank-1.json", "rank-1.txt"]
    for entry in index[-4:]:
        snap = out / "dumps" / entry["dir"]
        stacks = {r: main_thread_frames(json.loads((snap / f"rank-{r}.json").read_text())) for r in (0, 1)}
        healthy = 1 - faulty
        assert stacks[faulty] and stacks[healthy]
        assert stacks[faulty] != stacks[healthy]
        assert marker in stacks[faulty]
        assert "all_reduce" in stacks[healthy]
        assert "all_reduce" not in stacks[faulty]
        assert marker in (snap / f"rank-{faulty}.txt").read_text()


@pytest.mark.timeout(120)
def test_fail_hang_sleep_stacks_differ_pyspy(tmp_path: Path) -> None:
    res = run_scenario(
        _scenario("hang_sleep_before_allreduce", collective_s=20), tmp_path / "run", ranks=2, faulty_rank=1, onset_step=25
    )
    assert res.status == "failed"
    _hang_checks(res, faulty=1, marker="_refresh_lease")


@pytest.mark.timeout(150)
def test_fail_hang_inside_a_subgroup_flight_recorder_and_stacks(tmp_path: Path) -> None:
    from diag_service.hang import HangRequest, analyze_hang

    res = run_scenario(_scenario("hang_subgroup_sleep", collective_s=20), tmp_path / "run", faulty_rank=3, onset_step=20)
    assert res.hang_detected
    _common_checks(res)
    fr_dir = res.out_dir / "fr"
    assert sorted(p.name for p in fr_dir.iterdir()) == [f"nccl_trace_rank_{r}" for r in range(4)]
    only_fr = analyze_hang(HangRequest(dumps_dir=str(fr_dir)))
    assert only_fr.suspects[0].rank == 3
    stall = next(s for s in only_fr.collectives.stalls if s.group_ranks == [2, 3])  # type: ignore[union-attr]
    assert stall.missing == [3] and stall.joined == [2] and stall.op == "all_reduce"
    both = analyze_hang(HangRequest(dumps_dir=str(res.out_dir)))
    assert both.evidence == ["stacks", "flight_recorder"]
    assert both.suspects[0].rank == 3 and both.suspects[0].score >= 0.97
    assert "_refresh_lease" in " ".join(both.suspects[0].top_frames)


@pytest.mark.timeout(120)
def test_fail_hang_deadlock_stacks_differ_faulthandler_fallback(tmp_path: Path) -> None:
    sc = _scenario("hang_lock_deadlock", collective_s=14, dump_interval_s=1.0)
    res = run_scenario(sc, tmp_path / "run", ranks=2, faulty_rank=0, onset_step=25, force_dump_fallback=True)
    assert res.dump_method == "faulthandler"
    _hang_checks(res, faulty=0, marker="flush_now")


@pytest.mark.timeout(90)
def test_fail_slow_straggler_compute_longer(tmp_path: Path) -> None:
    sc = load_scenarios()["slow_rank_compute"].model_copy(update={"steps": 80})
    res = run_scenario(sc, tmp_path / "run", ranks=2, faulty_rank=0, onset_step=40)
    assert res.status == "succeeded"
    truth = _common_checks(res)
    assert truth["slowdown_factor"] == pytest.approx(1.8)
    timing = _jsonl(res.out_dir / "timing.jsonl")
    assert len(timing) == 2 * 80

    def med(rank: int, key: str, after: bool) -> float:
        return statistics.median(
            t[key] for t in timing if t["rank"] == rank and (t["step"] >= 40 if after else 3 <= t["step"] < 40)
        )

    # In synchronous data parallelism every rank's wall-clock step is gated by the slowest one;
    # the straggler shows in its own compute time, the others wait for it in the all-reduce.
    assert med(0, "compute_s", True) > 1.4 * med(1, "compute_s", True)
    assert med(0, "compute_s", True) > 1.4 * med(0, "compute_s", False)
    assert med(1, "comm_s", True) > med(0, "comm_s", True)


@pytest.mark.timeout(120)
def test_fail_slow_job_wide_stretches_every_rank_by_the_same_time(tmp_path: Path) -> None:
    # A job-wide slowdown (slow_job_compute) must not turn the rank that happened to compute longest
    # before the onset into a straggler: every rank sleeps the same extra time, from the mean of the
    # ranks' median pre-onset compute (one all-reduce at the onset).
    sc = load_scenarios()["slow_job_compute"].model_copy(update={"steps": 45})
    res = run_scenario(sc, tmp_path / "run", ranks=2, nodes=1, onset_step=30, keep_work=True)
    assert res.status == "succeeded"
    assert not _leftover_processes(res.out_dir), "processes outlived the run"
    truth = json.loads((res.out_dir / "truth.json").read_text())  # .lab/ is kept here, so not _common_checks
    assert truth["faulty_rank"] is None and truth["affected_ranks"] == [0, 1]
    assert (res.out_dir / "host_cpu.jsonl").is_file()
    notes = [json.loads(p.read_text()) for p in sorted((res.out_dir / ".lab").rglob("fault-rank-*.json"))]
    assert [n["rank"] for n in notes] == [0, 1]
    assert all(n["step"] == 30 for n in notes)
    assert notes[0]["base_compute_s"] == pytest.approx(notes[1]["base_compute_s"], rel=1e-9)
    timing = _jsonl(res.out_dir / "timing.jsonl")
    own = {r: statistics.median(t["compute_s"] for t in timing if t["rank"] == r and 3 <= t["step"] < 30) for r in (0, 1)}
    assert notes[0]["base_compute_s"] == pytest.approx((own[0] + own[1]) / 2, rel=0.25)
