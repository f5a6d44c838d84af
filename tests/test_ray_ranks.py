"""Ray Train's driver console (real zoo dev runs, eval/zoo/runs, Ray 2.60, TorchTrainer on gloo): a worker's lines
carry Ray's ``(RayTrainWorker pid=N)`` prefix, not a rank; Ray Train states which pid holds which rank
(``Setting up process group for: env:// [rank=R, world_size=W]``, the controller's ``(ip=A, pid=P) world_rank=R``),
and the raylet's report of a dead worker names its ``Worker PID``."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_diagnose

from diag_service.logformat import attribute

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs"


def test_rays_prefix_gives_the_writers_pid() -> None:
    att = attribute("(RayTrainWorker pid=8316) ValueError: could not convert string to float: '1,204.50'",
                    frozenset({"ray"}))
    assert (att.pid, att.text) == (8316, "ValueError: could not convert string to float: '1,204.50'")


@pytest.mark.parametrize(
    ("run", "rank"),
    [
        ("ray_data_bad_row", 1),  # the worker's own ValueError, behind its pid prefix
        ("ray_kill_worker", 1),  # SIGKILLed: the raylet names the dead worker's pid; rank 0 only lost its peer
        ("ray_oom_worker_cache", 1),  # killed by the kernel OOM killer under a cgroup, the same way
    ],
)
def test_the_failed_ray_workers_rank_is_named(run: str, rank: int) -> None:
    d = run_diagnose(ZOO / run)
    assert d.first_failing_rank == rank
