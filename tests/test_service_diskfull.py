"""A full disk (issue 19, finding 9): the API answers a JSON 507 in the service's error shape, never a
plain-text 500, and a job that hits it ends ``failed`` instead of staying ``running``.

The disk is made full where each write happens: the upload's file writes raise ``OSError(ENOSPC)``;
the store's writes raise what SQLite raises when it has no room (a real ``SQLITE_FULL``, made with
``PRAGMA max_page_count``); the analysis raises ``OSError(ENOSPC)``.
"""

from __future__ import annotations

import builtins
import errno
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from test_service_support import ADMIN, EXAMPLE, service_settings, tar_gz

from diag_service.service import api, create_app, tasks, uploads
from diag_service.service.faults import is_disk_full
from diag_service.service.store import StoreError

BASE = "http://127.0.0.1:8080"
LOG = b"[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: CUDA error: an illegal memory access\n"


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _sqlite_full() -> sqlite3.OperationalError:
    """The error SQLite itself raises when a write finds no room."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x BLOB)")
    con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0]}")
    try:
        con.execute("INSERT INTO t VALUES (zeroblob(100000))")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        con.close()
    raise AssertionError("SQLite took the write")


def _store_full(*_a: Any, **_k: Any) -> None:
    try:
        raise _sqlite_full()
    except sqlite3.OperationalError as exc:  # as Store._tx wraps it (through SQLAlchemy's OperationalError)
        raise StoreError(f"store error: OperationalError: {exc}") from exc


class _FullFile:
    """A file opened for writing on a full disk: every write raises ENOSPC."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, _data: bytes) -> int:
        raise _enospc()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()


def _full_open(path: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
    f = builtins.open(path, mode, *a, **kw)  # noqa: SIM115 - closed by the caller, as open() would be
    return _FullFile(f) if any(c in mode for c in "wax") else f


@pytest.fixture()
def app(tmp_path: Path) -> Iterator[FastAPI]:
    a = create_app(service_settings(tmp_path, workers=1))
    yield a


def _client(app: FastAPI) -> TestClient:
    # raise_server_exceptions=False: see what a client sees when something goes unhandled
    return TestClient(app, base_url=BASE, raise_server_exceptions=False, headers={"Authorization": f"Bearer {ADMIN}"})


def _assert_disk_full(r: Any, what: str) -> dict[str, Any]:
    assert r.status_code == 507, r.text[:300]
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert "no space left on the service's disk" in body["detail"] and what in body["detail"]
    return body


def test_disk_full_is_recognised_through_its_wrappers() -> None:
    assert is_disk_full(_enospc()) and is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_disk_full(_sqlite_full())
    try:
        _store_full()
    except StoreError as exc:
        assert is_disk_full(exc)

    class PgDiskFull(Exception):
        sqlstate = "53100"

    assert is_disk_full(RuntimeError("wrapped")) is False
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = PgDiskFull()
    assert is_disk_full(wrapped)
    assert not is_disk_full(FileNotFoundError(errno.ENOENT, "gone")) and not is_disk_full(ValueError("x"))
    loop = RuntimeError("a")
    loop.__context__ = loop
    assert not is_disk_full(loop)


@pytest.mark.parametrize("multipart", [False, True])
def test_an_upload_on_a_full_disk_is_a_json_507(app: FastAPI, monkeypatch: pytest.MonkeyPatch, multipart: bool) -> None:
    monkeypatch.setattr(uploads, "open", _full_open, raising=False)
    monkeypatch.setattr(api, "open", _full_open, raising=False)
    c = _client(app)
    if multipart:
        r = c.post("/v1/diagnoses", files={"bundle": ("job.log", LOG)}, data={"wait": "false"})
    else:
        r = c.post("/v1/diagnoses", params={"filename": "job.log", "wait": "false"}, content=LOG,
                   headers={"Content-Type": "application/octet-stream"})
    body = _assert_disk_full(r, "the upload")
    assert body["reason"] == "disk_full" and body["kind"] == "unavailable"
    assert app.state.ctx.store.count() == 0, "no job for an upload that was not stored"
    assert not any(app.state.ctx.settings.uploads_dir.iterdir()), "the partial upload is removed"
    assert 'diag_refusals_total{reason="disk_full"}' in c.get("/metrics").text


def _patch_store(app: FastAPI, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        monkeypatch.setattr(app.state.ctx.store, name, _store_full)


def test_a_result_that_cannot_be_stored_fails_its_job_with_507(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    with _client(app) as c:
        _patch_store(app, monkeypatch, "finish")
        r = c.post("/v1/diagnoses", files={"bundle": ("job.tar.gz", tar_gz(EXAMPLE))}, data={"job_id": "j-1"})
        _assert_disk_full(r, "the result")
        assert r.json()["status"] == "failed"
        job = c.get(f"/v1/jobs/{r.json()['id']}").json()
        assert job["status"] == "failed" and job["error_status"] == 507
        assert not (app.state.ctx.settings.uploads_dir / job["id"]).exists(), "its upload is removed to free space"


def test_a_job_whose_failure_cannot_be_stored_either_is_failed_not_running(
        app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    store = app.state.ctx.store
    with _client(app) as c:
        _patch_store(app, monkeypatch, "finish", "fail")
        r = c.post("/v1/diagnoses", files={"bundle": ("job.tar.gz", tar_gz(EXAMPLE))}, data={"job_id": "j-2"})
        _assert_disk_full(r, "the result")
        first = r.json()["id"]
        assert store.get(first).status == "running", "the store could not be told"
        job = c.get(f"/v1/jobs/{first}").json()
        assert job["status"] == "failed" and job["error_status"] == 507, "the API says what happened all the same"
        page = c.get(f"/ui/diagnoses/{first}").text
        assert "failed" in page and "no space left" in page
        # space is freed: the next job that the store takes also writes the first one's failure
        monkeypatch.undo()
        r = c.post("/v1/diagnoses", files={"bundle": ("job.tar.gz", tar_gz(EXAMPLE))}, data={"job_id": "j-3"})
        assert r.status_code == 200 and r.json()["status"] == "done"
        stored = store.get(first)
        assert stored.status == "failed" and stored.error_status == 507


def test_an_analysis_that_hits_a_full_disk_fails_with_507(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    def analysis_on_full_disk(_task: dict[str, Any]) -> dict[str, Any]:
        raise _enospc()  # e.g. writing the recovery history

    analyses: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = tasks._KINDS
    with _client(app) as c:
        monkeypatch.setitem(analyses, "diagnose", analysis_on_full_disk)
        r = c.post("/v1/diagnoses", files={"bundle": ("job.tar.gz", tar_gz(EXAMPLE))}, data={"job_id": "j-4"})
        _assert_disk_full(r, "the analysis (OSError)")
        assert app.state.ctx.store.get(r.json()["id"]).status == "failed"


def test_other_os_errors_are_json_500s(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_a: Any, **_k: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(uploads, "open", broken, raising=False)
    r = _client(app).post("/v1/diagnoses", params={"filename": "job.log"}, content=LOG,
                          headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 500 and r.json() == {"detail": "internal error (logged by the service)", "kind": "internal"}
