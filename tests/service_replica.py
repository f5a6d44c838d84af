"""One service replica's work queue as a process of its own, for tests/test_service_replicas.py.

Usage: ``python tests/service_replica.py CONFIG.json``; the config names ``db_url``, ``replica_id``,
``jobs`` (how many diagnoses of ``example`` this replica submits, named ``<prefix><replica>-<i>``),
``log`` (a file that gets one line per event: ``start JOB REPLICA`` when a run of a job begins,
``stored JOB REPLICA`` when this replica stored its outcome), ``hold_first`` (true: the first run
blocks until the process is killed, so it can be killed mid-job), ``lease_s`` and ``data_dir``.

The queue, the store and the analyses are the service's own (thread workers, the real diagnosis of
the example bundle); only ``run_task`` is wrapped to write the ``start`` line first.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import diag_service.service.queue as queue_mod
from diag_service.service.settings import Settings
from diag_service.service.store import JobRecord, Store


def main(cfg: dict[str, Any]) -> None:
    rid = cfg["replica_id"]
    lock = threading.Lock()

    def note(event: str, job_id: str | None) -> None:
        with lock, open(cfg["log"], "a", encoding="utf-8") as fh:  # one short O_APPEND write per line
            fh.write(f"{event} {job_id} {rid}\n")

    real_run = queue_mod.run_task
    first = threading.Event()

    def run(task: dict[str, Any]) -> dict[str, Any]:
        note("start", task.get("job_id"))
        if cfg.get("hold_first") and not first.is_set():
            first.set()
            threading.Event().wait()  # mid-job until SIGKILL
        return real_run(task)

    queue_mod.run_task = run
    settings = Settings(data_dir=cfg["data_dir"], database_url=cfg["db_url"], replica_id=rid, worker_mode="thread",
                        workers=1, lease_s=cfg["lease_s"], kb_enabled=False, llm=False, recovery=False)
    store = Store(settings.db_url)

    def stored(job: JobRecord, _outcome: dict[str, Any]) -> None:
        note("stored", job.job_id)

    q = queue_mod.JobQueue(settings, store, on_done=stored)
    q.start()
    for i in range(cfg["jobs"]):
        name = f"{cfg.get('prefix', '')}{rid}-{i}"
        job = store.create_job("diagnose", {"kind": "diagnose", "path": cfg["example"], "job_id": name}, rid,
                               job_id=name, lease_s=settings.lease_s)
        q.submit(job)
    note("submitted", str(cfg["jobs"]))
    threading.Event().wait()


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        main(json.load(fh))
