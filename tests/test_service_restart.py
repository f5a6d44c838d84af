"""Durability: a killed server loses nothing (queued and running work resumes after a restart, or ends
with a stated reason), and stored results are written once and never overwritten or deleted.

The restart test runs ``diag serve`` (the ``serve`` function) as a real subprocess with process
workers on 127.0.0.1 and kills it with SIGKILL while it works.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_service_support import EXAMPLE, service_settings, wait_until

from diag_service.service.queue import JobQueue
from diag_service.service.store import Store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cfg: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    code = ("from pathlib import Path\nfrom diag_service.service.cli import serve\n"
            f"serve(host='127.0.0.1', port={port}, config=Path({str(cfg)!r}), log_level='warning')\n")
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-c", code], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _big_bundle(root: Path, name: str, mib: int) -> Path:
    """The example failure plus ``mib`` MiB of ordinary training chatter (varied, as real step lines are)."""
    import random
    import shutil

    d = root / name
    shutil.copytree(EXAMPLE, d)
    rnd = random.Random(mib)
    with open(d / "node0" / "chatter.log", "w") as fh:
        n = 0
        i = 0
        while n < mib << 20:
            line = (f"[rank{i % 2}]: 2026-11-29 08:{i // 3600 % 60:02d}:{i // 60 % 60:02d},{i % 1000:03d} INFO step {i} "
                    f"loss {rnd.uniform(1, 3):.4f} lr 3.0e-4 grad_norm {rnd.uniform(0.5, 2):.3f} "
                    f"tokens/s {rnd.randint(9000, 16000)}\n")
            fh.write(line)
            n += len(line)
            i += 1
    return d


def test_sigkill_while_working_then_restart_finishes_everything(tmp_path: Path) -> None:
    roots = tmp_path / "roots"
    roots.mkdir()
    names = [f"job-{i}" for i in range(3)]
    for i, n in enumerate(names):
        _big_bundle(roots, n, mib=24 if i == 0 else 2)  # the first one is still running when the server dies
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"data_dir": str(tmp_path / "data"), "worker_mode": "process", "workers": 1, "kb_enabled": False,
                               "llm": False, "allowed_roots": [str(roots)], "replica_id": "replica-a", "recovery": False}))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    proc = _start(cfg, port, log)
    try:
        wait_until(lambda: _ready(url), timeout=90, step=0.2)
        ids = []
        for n in names:
            r = httpx.post(url + "/v1/diagnoses", json={"path": n, "wait": False}, timeout=30)
            assert r.status_code == 202, r.text[:300]
            ids.append(r.json()["id"])
        wait_until(lambda: any(_status(url, i) == "running" for i in ids), timeout=60, step=0.05)
        _kill(proc)  # the server and its worker, mid-job, with more queued
        store = Store(f"sqlite:///{tmp_path / 'data' / 'diag.sqlite'}")
        at_kill = {i: store.get(i).status for i in ids}  # type: ignore[union-attr]
        store.close()
        assert "running" in at_kill.values() and "queued" in at_kill.values(), at_kill
        proc = _start(cfg, port, log)
        wait_until(lambda: _ready(url), timeout=90, step=0.2)
        finals = [wait_until(lambda i=i: _final(url, i), timeout=120, step=0.2) for i in ids]
    finally:
        _kill(proc)
    assert [f["status"] for f in finals] == ["done"] * 3, [f.get("error") for f in finals]
    assert all(f["diagnosis"]["category"] == "user_code" for f in finals)
    for f in finals:  # the job running at the kill ran again; the queued ones ran once
        assert f["attempts"] == (2 if at_kill[f["id"]] == "running" else 1 if at_kill[f["id"]] == "queued" else f["attempts"])
    assert [f["job_id"] for f in finals] == names


def _status(url: str, id_: str) -> str | None:
    # a poll can be answered by the rate limiter (429) instead of the job: that is "not yet", not a failure
    r = httpx.get(f"{url}/v1/jobs/{id_}", timeout=10)
    return r.json().get("status") if r.status_code == 200 else None


def _final(url: str, id_: str) -> dict[str, Any] | None:
    body = httpx.get(f"{url}/v1/diagnoses/{id_}", timeout=10).json()
    return body if body["status"] in ("done", "failed") else None


def test_restart_ends_hopeless_jobs_with_a_stated_reason(tmp_path: Path) -> None:
    settings = service_settings(tmp_path, replica_id="r1", max_attempts=3)
    settings.data_dir.mkdir(parents=True)
    store = Store(settings.db_url)
    gone = store.create_job("diagnose", {"kind": "diagnose", "path": str(tmp_path / "deleted")}, "r1")
    crashing = store.create_job("diagnose", {"kind": "diagnose", "path": str(EXAMPLE)}, "r1")
    for _ in range(3):
        store.mark_running(crashing.id)
    resumable = store.create_job("diagnose", {"kind": "diagnose", "path": str(EXAMPLE), "job_id": "ok"}, "r1")
    store.mark_running(resumable.id)
    other = store.create_job("diagnose", {"kind": "diagnose", "path": str(EXAMPLE)}, "another-replica")
    q = JobQueue(settings, store)
    notes = q.start()
    try:
        assert len(notes) == 3
        g = store.get(gone.id)
        assert g is not None and g.status == "failed" and g.error_status == 410 and "input lost" in (g.error or "")
        c = store.get(crashing.id)
        assert c is not None and c.status == "failed" and "gave up after 3 attempt(s)" in (c.error or "")
        wait_until(lambda: store.get(resumable.id).status == "done")  # type: ignore[union-attr]
        assert store.get(resumable.id).attempts == 2  # type: ignore[union-attr]
        assert store.get(other.id).status == "queued", "another replica's work is left to it"  # type: ignore[union-attr]
    finally:
        q.stop()
        store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.sqlite'}"
    return request.getfixturevalue("postgres_url")  # a throwaway server unless DIAG_TEST_POSTGRES_URL is set (tests/pg.py)


def test_results_are_written_once_and_never_lost(store_url: str) -> None:
    store = Store(store_url)
    try:
        job = store.create_job("diagnose", {"kind": "diagnose", "path": "/x"}, "r")
        assert store.mark_running(job.id) is not None
        assert store.finish(job.id, '{"v": 1}', category="network", summary="first") is True
        assert store.finish(job.id, '{"v": 2}', category="data") is False
        assert store.fail(job.id, "late failure") is False
        assert store.mark_running(job.id) is None
        store.requeue(job.id, "r")
        got = store.get(job.id)
        assert got is not None and got.status == "done" and got.result == '{"v": 1}' and got.category == "network"
        # feedback is append-only
        store.add_feedback(job.id, "confirmed", "network", source="api")
        store.add_feedback(job.id, "corrected", "data", source="slack", who="u")
        assert [f.verdict for f in store.feedback_for(job.id)] == ["confirmed", "corrected"]
        # concurrent writers: every result is kept
        ids = [store.create_job("hang", {"kind": "hang"}, "r").id for _ in range(64)]

        def finish(chunk: list[str]) -> None:
            for i in chunk:
                store.mark_running(i)
                store.finish(i, json.dumps({"id": i}))

        threads = [threading.Thread(target=finish, args=(ids[k::8],)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert all(json.loads(store.get(i).result or "{}") == {"id": i} for i in ids)  # type: ignore[union-attr]
        assert store.latest_for_job("nope") is None
    finally:
        store.close()


def test_alert_claims_deduplicate_across_replicas(store_url: str) -> None:
    a, b = Store(store_url), Store(store_url)
    key = f"hang:job-{time.time_ns()}"
    try:
        results = []
        threads = [threading.Thread(target=lambda s=s: results.append(s.claim_alert(key, "hang", "j", {}, 3600)))
                   for s in (a, b, a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(results) == [False, False, False, True]
        assert a.alert_count(key) == 4
        assert b.claim_alert(key, "hang", "j", {}, repeat_s=0) is True  # past the repeat window: announced again
    finally:
        a.close()
        b.close()


def test_an_alert_that_fails_to_send_is_retried_and_sent_once_when_the_webhook_recovers(tmp_path) -> None:  # noqa: ANN001
    import httpx

    from diag_service.bot.alerts import Alert, Notifier

    store = Store(f"sqlite:///{tmp_path / 'alerts.sqlite'}")
    received: list[dict] = []
    calls = {"n": 0}

    def webhook(request: httpx.Request) -> httpx.Response:  # down for the first two attempts, then healthy
        calls["n"] += 1
        if calls["n"] <= 2:
            return httpx.Response(503)
        received.append(json.loads(request.content))
        return httpx.Response(200)

    outcomes: list[str] = []
    n = Notifier([("http://hooks.test/x", "mattermost")], claim=lambda k, kind, j, m: store.claim_alert(k, kind, j, m, 3600),
                 release=store.release_alert, on_outcome=lambda kind, o: outcomes.append(o), retry_wait_s=0.01,
                 client=httpx.Client(transport=httpx.MockTransport(webhook)))
    alert = Alert(kind="hang", job_id="job-7", title="Job job-7 is hung", text="rank 3 stuck in all_reduce")
    try:
        assert n.notify(alert).result(30) == 1  # type: ignore[union-attr]
        assert len(received) == 1 and calls["n"] == 3 and outcomes.count("retried") == 2 and "sent" in outcomes
        assert n.notify(alert) is None  # the same incident again: suppressed, not sent twice
        assert len(received) == 1

        # a receiver down for longer than the retries: nothing sent, and the claim is given back, so
        # the incident's next alert goes out once the receiver is back
        calls["n"] = -100
        other = Alert(kind="slow", job_id="job-8", title="Job job-8 is slow", text="x1.4")
        assert n.notify(other).result(30) == 0  # type: ignore[union-attr]
        assert "failed" in outcomes and len(received) == 1
        calls["n"] = 10
        assert n.notify(other).result(30) == 1  # type: ignore[union-attr]
        assert len(received) == 2 and "job-8" in json.dumps(received[1])
    finally:
        n.close()
        store.close()


def test_a_lapsed_lease_is_taken_over_once_and_the_old_holder_cannot_store(store_url: str) -> None:
    a, b = Store(store_url), Store(store_url)
    try:
        live = a.create_job("diagnose", {"kind": "diagnose"}, "A", lease_s=3600)
        unleased = a.create_job("diagnose", {"kind": "diagnose"}, "A")  # no lease: left to A's restart
        dead = a.create_job("diagnose", {"kind": "diagnose"}, "A", lease_s=3600)
        assert a.claim(dead.id, "A", lease_s=-1) is not None  # A runs it, then stops renewing (a lapsed lease)
        assert b.claim(live.id, "B", 60) is None and b.claim(unleased.id, "B", 60) is None
        taken = b.claim_next("B", 60)
        assert taken is not None and taken.id == dead.id and taken.owner == "B" and taken.attempts == 2
        assert b.claim_next("B", 60) is None  # nothing else lapsed
        assert a.finish(dead.id, '{"by": "A"}', owner="A") is False  # A woke up late: fenced off
        assert a.fail(dead.id, "late", owner="A") is False
        assert a.renew("A", [dead.id, live.id], 60) == 1  # only what A still holds
        assert b.finish(dead.id, '{"by": "B"}', owner="B") is True
        got = a.get(dead.id)
        assert got is not None and got.status == "done" and got.result == '{"by": "B"}'
        assert a.requeue(dead.id, "A") is False and a.claim(dead.id, "A", 60) is None
    finally:
        a.close()
        b.close()


def test_replicas_claiming_at_once_each_get_different_jobs(store_url: str) -> None:
    seed = Store(store_url)
    ids = {seed.create_job("hang", {"kind": "hang"}, "dead-replica", lease_s=-1).id for _ in range(24)}
    stores = [Store(store_url) for _ in range(4)]
    claimed: list[tuple[str, str]] = []
    lock = threading.Lock()

    def drain(k: int) -> None:
        for _ in range(40):
            job = stores[k].claim_next(f"r{k}", 60)
            if job is not None:
                with lock:
                    claimed.append((job.id, job.owner))

    threads = [threading.Thread(target=drain, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sorted(i for i, _ in claimed) == sorted(ids)  # each lapsed job claimed by exactly one replica
        assert all(seed.get(i).owner == o and seed.get(i).attempts == 1 for i, o in claimed)  # type: ignore[union-attr]
    finally:
        for s in (seed, *stores):
            s.close()


def _serve_config(tmp_path: Path, **extra: Any) -> Path:
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"data_dir": str(tmp_path / "data"), "worker_mode": "process", "workers": 1, "kb_enabled": False,
                               "llm": False, "replica_id": "replica-a", "recovery": False, **extra}))
    return cfg


def test_a_partial_upload_of_a_killed_server_does_not_survive_the_restart(tmp_path: Path) -> None:
    """The raw body is written to uploads/<uuid>/ as it arrives; the server dies mid-request, so the
    file (raw, unredacted log text) belongs to no job. The restarted server removes it."""
    cfg = _serve_config(tmp_path)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    secret = "AccountKey=c2VjcmV0LXN0b3JhZ2Uta2V5LW5vdC10by1iZS1rZXB0LTAxMjM0NTY3ODk="
    head = (f"[rank0]: export AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=ckpt;{secret}\n"
            + "[rank0]: step 1 loss 2.3110 lr 3.0e-4\n" * 4000).encode()
    uploads = tmp_path / "data" / "uploads"
    proc = _start(cfg, port, log)
    sock = None
    try:
        wait_until(lambda: _ready(url), timeout=90, step=0.2)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"POST /v1/diagnoses?filename=rank0.log HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/octet-stream\r\nContent-Length: 50000000\r\n\r\n" + head)

        def partial() -> list[Path]:
            # the body so far is on disk (the last few KiB may still sit in the writer's buffer)
            return [p for p in uploads.glob("*/*") if p.is_file() and p.stat().st_size >= 64 << 10]

        files = wait_until(partial, timeout=30, step=0.05)
        assert secret.encode() in files[0].read_bytes()
        _kill(proc)  # mid-upload
        assert files[0].exists()
        proc = _start(cfg, port, log)
        wait_until(lambda: _ready(url), timeout=90, step=0.2)
    finally:
        if sock is not None:
            sock.close()
        _kill(proc)
    assert not files[0].parent.exists()
    leftovers = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leftovers == []
    assert "partial upload of a request that never became a job" in log.read_text(errors="replace")


def test_worker_processes_end_with_a_killed_server(tmp_path: Path) -> None:
    """SIGKILL of the server alone (not its process group): its worker process must not live on. The
    worker is stopped (SIGSTOP) first, as one deep in an analysis is: it cannot notice its pipe closing,
    so only the kernel (PR_SET_PDEATHSIG) ends it."""
    import psutil

    cfg = _serve_config(tmp_path)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _start(cfg, port, tmp_path / "server.log")
    children: list[psutil.Process] = []
    try:
        wait_until(lambda: _ready(url), timeout=90, step=0.2)
        server = psutil.Process(proc.pid)
        workers = [c for c in server.children(recursive=True) if "spawn_main" in " ".join(c.cmdline())
                   and "resource_tracker" not in " ".join(c.cmdline())]
        assert workers, [c.cmdline() for c in server.children(recursive=True)]
        children = server.children(recursive=True)
        for w in workers:
            w.suspend()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

        def gone() -> bool:
            for c in children:
                try:
                    if c.status() != psutil.STATUS_ZOMBIE:
                        return False
                except psutil.NoSuchProcess:
                    pass
            return True

        wait_until(gone, timeout=30, step=0.1)
    finally:
        for c in children:  # on failure: leave nothing behind
            with contextlib.suppress(psutil.NoSuchProcess):
                c.kill()
        _kill(proc)


def test_a_database_made_before_leases_gets_the_lease_column(store_url: str) -> None:
    from sqlalchemy import text

    old = Store(store_url)
    with old.engine.begin() as conn:  # the jobs table as it was made before leases
        conn.execute(text("ALTER TABLE jobs DROP COLUMN lease_until"))
        conn.execute(text("INSERT INTO jobs (id, kind, status, owner, created_at, attempts, request, input_bytes) "
                          "VALUES ('0123456789abcdef0123456789abcdef', 'diagnose', 'queued', 'r', 1.0, 0, '{}', 0)"))
    old.close()
    store = Store(store_url)
    try:
        job = store.get("0123456789abcdef0123456789abcdef")
        assert job is not None and job.lease_until is None
        assert store.claim_next("other", 60) is None  # a job without a lease is left to its owner
        assert store.claim(job.id, "r", 60) is not None
    finally:
        store.close()


def test_upload_folders_that_no_job_will_read_are_removed(tmp_path: Path) -> None:
    from diag_service.service.queue import ORPHAN_AFTER_S
    from diag_service.service.store import new_id

    settings = service_settings(tmp_path, replica_id="r1")
    settings.uploads_dir.mkdir(parents=True)
    store = Store(settings.db_url)

    def folder(name: str, age_s: float = 0.0) -> Path:
        d = settings.uploads_dir / name
        d.mkdir()
        (d / "rank0.log").write_text("[rank0]: password=hunter2\n")
        t = time.time() - age_s
        for p in (d / "rank0.log", d):
            os.utime(p, (t, t))
        return d

    queued = store.create_job("diagnose", {"kind": "diagnose"}, "r1", job_uuid=new_id(), lease_s=60)
    done = store.create_job("diagnose", {"kind": "diagnose"}, "r1", job_uuid=new_id())
    store.claim(done.id, "r1", 60)
    store.finish(done.id, "{}", owner="r1")
    keep = [folder(queued.id), folder(new_id()), folder("notes")]  # queued; an upload in progress; not ours
    gone = [folder(done.id), folder(new_id(), age_s=ORPHAN_AFTER_S + 60)]  # finished; a dead request's
    q = JobQueue(settings, store)
    try:
        notes = q.clean_uploads(alone=False)  # another live server may be writing the fresh one
        assert all(d.exists() for d in keep) and not any(d.exists() for d in gone), notes
        assert sorted(n.split(": ", 1)[1] for n in notes) == ["removed (input of a done job)",
                                                               "removed (partial upload of a request that never became a job)"]
        assert len(q.clean_uploads(alone=True)) == 1  # alone: the fresh job-less one is a dead request's too
        assert [d.exists() for d in keep] == [True, False, True]
    finally:
        store.close()
