"""The Ray Data engine on a local Ray cluster gives the same rows as the local process pool.

One local Ray instance (2 CPUs, no dashboard) for the module, always shut down. The archive is
small (real logs, the example, bad bundles) so the test stays well under a minute and a half,
most of it Ray's own start-up. It also checks that a run begun with one engine can be resumed
with the other.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_label import BAD, DEV_LOGS, add_dev_jobs, needs_dev, rows_by_id, run_label, small_archive

from diag_service.label import RayEngine, read_labels
from diag_service.label.engines import ray_cpus_per_worker

ray = pytest.importorskip("ray", reason="ray[data] not installed (pip install 'ray[data]')")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray Data's own deprecated settings


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    import logging

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        yield
    finally:
        ray.shutdown()


@needs_dev
@pytest.mark.timeout(240)
def test_ray_and_local_engines_give_identical_rows(tmp_path: Path, local_ray: None) -> None:
    archive = small_archive(tmp_path)
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    local, _ = run_label(archive, local_out)
    on_ray, _ = run_label(archive, ray_out, engine=RayEngine(workers=2, batch_size=3))
    a, b = read_labels(local_out), read_labels(ray_out)
    assert len(a) == len(DEV_LOGS) + 2 + len(BAD)
    assert a.equals(b)  # every column of every row
    assert local.summary.model_dump(exclude={"run", "out"}) == on_ray.summary.model_dump(exclude={"run", "out"})
    assert on_ray.summary.run["engine"] == "ray" and on_ray.summary.run["workers"] == 2

    # Begun locally, finished on Ray: only the new jobs go to Ray, and the rows are the same as all-local.
    mixed_archive = tmp_path / "mixed"
    mixed_archive.mkdir()
    ids = add_dev_jobs(mixed_archive)
    held_back = ids[len(ids) // 2 :]
    parked = tmp_path / "parked"
    parked.mkdir()
    for jid in held_back:
        shutil.move(mixed_archive / jid, parked / jid)
    mixed_out = tmp_path / "mixed_out"
    run_label(mixed_archive, mixed_out)
    for jid in held_back:
        shutil.move(parked / jid, mixed_archive / jid)
    resumed, _ = run_label(mixed_archive, mixed_out, engine=RayEngine(workers=2, batch_size=3))
    assert resumed.labelled_now == len(held_back) and resumed.done_before == len(ids) - len(held_back)
    rows = rows_by_id(mixed_out)
    ref = rows_by_id(local_out)
    for jid in ids:
        assert {k: v for k, v in rows[jid].items() if k != "path"} == {k: v for k, v in ref[jid].items() if k != "path"}


def test_actors_leave_a_cpu_for_ray_data_on_small_machines() -> None:
    assert ray_cpus_per_worker(2, 2) == 0.5
    assert ray_cpus_per_worker(2, 1) == 1.0
    assert ray_cpus_per_worker(64, 64) == 0.98
    assert ray_cpus_per_worker(1, 4) == 0.1
