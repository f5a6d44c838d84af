"""Replicas share one store's queue: a replica killed mid-job loses no job, and no job is run to
completion twice (issue 19, finding 10).

Three replica processes (``tests/service_replica.py``: the service's own queue and store, thread
workers, the real diagnosis) on one database: PostgreSQL (a throwaway server, ``tests/pg.py``) and
SQLite. The victim submits four jobs and is SIGKILLed while it runs the first; its lease lapses and
the two survivors take its jobs over between them.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from test_service_support import EXAMPLE, REPO, wait_until

from diag_service.service.store import Store

LEASE_S = 3.0
JOBS = {"victim": 4, "s1": 2, "s2": 2}


@pytest.fixture(params=["postgresql", "sqlite"])
def shared_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite'}"
    return request.getfixturevalue("postgres_url")


def _events(log: Path) -> list[tuple[str, str, str]]:
    if not log.exists():
        return []
    return [tuple(line.split(" ")) for line in log.read_text(encoding="utf-8").splitlines() if line]  # type: ignore[misc]


def _start(tmp: Path, db_url: str, rid: str, log: Path, prefix: str) -> subprocess.Popen[bytes]:
    cfg = tmp / f"{rid}.json"
    cfg.write_text(json.dumps({"db_url": db_url, "replica_id": rid, "jobs": JOBS[rid], "log": str(log), "prefix": prefix,
                               "hold_first": rid == "victim", "lease_s": LEASE_S, "data_dir": str(tmp / rid),
                               "example": str(EXAMPLE)}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = open(tmp / f"{rid}.out", "ab")  # noqa: SIM115 - the child's output, read when the test fails
    return subprocess.Popen([sys.executable, str(REPO / "tests" / "service_replica.py"), str(cfg)], stdout=out,
                            stderr=subprocess.STDOUT, env=env, cwd=REPO)


def test_a_replica_killed_mid_job_loses_no_job_and_none_is_done_twice(shared_db: str, tmp_path: Path) -> None:
    Store(shared_db).close()  # the tables exist before three processes race to make them
    log = tmp_path / "events.log"
    run = f"{uuid.uuid4().hex[:8]}-"  # job names of this run (DIAG_TEST_POSTGRES_URL may hold earlier runs' rows)
    procs = {rid: _start(tmp_path, shared_db, rid, log, run) for rid in JOBS}
    try:
        wait_until(lambda: ("start", f"{run}victim-0", "victim") in _events(log)
                   and sum(e[0] == "submitted" for e in _events(log)) == 3, timeout=120, step=0.1)
        procs["victim"].send_signal(signal.SIGKILL)  # mid-job, with three more of its jobs queued
        assert procs["victim"].wait(10) == -signal.SIGKILL
        names = [f"{run}{rid}-{i}" for rid, n in JOBS.items() for i in range(n)]
        wait_until(lambda: {e[1] for e in _events(log) if e[0] == "stored"} >= set(names), timeout=180, step=0.2)
        store = Store(shared_db)
        try:
            results = {n: store.latest_for_job(n) for n in names}
        finally:
            store.close()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(10)
    outs = {rid: (tmp_path / f"{rid}.out").read_text(errors="replace")[-2000:] for rid in JOBS}
    events = _events(log)
    starts = collections.Counter(e[1] for e in events if e[0] == "start")
    stored = collections.Counter(e[1] for e in events if e[0] == "stored")
    # every job stored exactly once, by a live replica; the victim's jobs by the survivors
    assert stored == dict.fromkeys(names, 1), (events, outs)
    by = {e[1]: e[2] for e in events if e[0] == "stored"}
    assert all(by[f"{run}victim-{i}"] in ("s1", "s2") for i in range(JOBS["victim"])), by
    # run once each, except the job the victim was killed in: run again by exactly one survivor
    assert starts == {n: 2 if n == f"{run}victim-0" else 1 for n in names}, events
    for n, job in results.items():
        assert job is not None and job.status == "done", (n, job)
        assert job.attempts == (2 if n == f"{run}victim-0" else 1), (n, job.attempts)
        assert job.owner == by[n] and job.category == "user_code", (n, job.owner, job.category)
        assert json.loads(job.result or "{}")["job_id"] == n
