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


def test_a_ray_actors_deepspeed_rank_statement_names_its_traceback(tmp_path: Path) -> None:
    """Ray-based RLHF trainers run DeepSpeed inside actors: the actor's own ``log_dist`` lines state its rank
    (``[logging.py:96:log_dist] [Rank 1] ...``, deepspeed/utils/logging.py) behind Ray's ``(Name pid=N)`` prefix, so its
    later traceback under the same pid is that rank's; another actor's lines (rank 0) are not blamed. The shape of a
    public OpenRLHF checkpoint-save failure (corpus dev), the ranks swapped."""
    log = "\n".join([
        "(ActorModelRayActor pid=4101) [2025-01-28 15:22:59,560] [INFO] [logging.py:96:log_dist] [Rank 0] "
        "[Torch] Checkpoint global_step12 is about to be saved!",
        "(ActorModelRayActor pid=4102) [2025-01-28 15:22:59,561] [INFO] [logging.py:96:log_dist] [Rank 1] "
        "[Torch] Checkpoint global_step12 is about to be saved!",
        "(ActorModelRayActor pid=4101) [2025-01-28 15:22:59,599] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] "
        "Saved ckpt/global_step12/zero_pp_rank_0_mp_rank_00_model_states.pt.",
        "(ActorModelRayActor pid=4102) Traceback (most recent call last):",
        '(ActorModelRayActor pid=4102)   File "/usr/lib/python3/dist-packages/torch/serialization.py", line 652, in save',
        "(ActorModelRayActor pid=4102)     _save(obj, opened_zipfile, pickle_module, pickle_protocol)",
        "(ActorModelRayActor pid=4102) RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter "
        "failed writing file data/0: file write failed",
    ]) + "\n"
    (tmp_path / "driver.log").write_text(log)
    d = run_diagnose(tmp_path)
    assert d.category.value == "storage" and d.first_failing_rank == 1, d.root_cause.summary
