"""Execution from live: with ``DIAG_EXECUTOR=shell`` and a recovery policy whose ``execution`` section allows it,
the plan of a live incident's final diagnosis is executed once per incident, with the audit trail; otherwise it
stays a recommendation. The executor is the real :class:`ShellExecutor` (its allow-list and placeholder checks);
only the process it would start is replaced by a recorder (``kubectl`` is not on this machine, and nothing
here may touch a cluster).

The logs are the real torchrun consoles of a lab run (tests/fixtures/lab_sigkill_silent_rank: an unexplained
fail-stop, whose plan is the policy's L2 "restart from the last checkpoint once")."""

from __future__ import annotations

import concurrent.futures
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_service_support import ADMIN, service_settings, wait_until

from diag_service.errors import ConfigError
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.recovery import History, ShellExecutor, load_policy
from diag_service.recovery.auto import IncidentRecovery
from diag_service.recovery.policy import default_policy_path
from diag_service.recovery.recommend import executor_from_env
from diag_service.service import create_app

recommend_mod = importlib.import_module("diag_service.recovery.recommend")  # (the package's `recommend` is the function)
FIX = Path(__file__).parent / "fixtures"
CASE = FIX / "lab_sigkill_silent_rank"
AGENT = "agent-token-0123456789abcdef"
T0 = 1_795_945_000.0


def allowing_policy(tmp: Path, **execution: Any) -> Path:
    """The built-in policy with live execution on (``execution`` overrides) and no back-off (the tests do not
    wait a minute before a restart)."""
    text = default_policy_path().read_text()
    builtin = "execution:\n  live: false\n  levels: [L1, L2, L3]\n"
    assert builtin in text and "backoff_base_s: 60" in text
    text = text.replace("backoff_base_s: 60", "backoff_base_s: 0")
    text = text.replace(builtin, "execution: " + json.dumps({"live": True, **execution}) + "\n")
    p = tmp / "policy.yaml"
    p.write_text(text)
    assert load_policy(p).execution.live is True
    return p


class Recorder:
    """Stands in for :func:`run_subprocess`: records each argv, answers ``code``."""

    def __init__(self, code: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.code = code

    def __call__(self, argv: list[str], timeout_s: float) -> int:
        self.calls.append(list(argv))
        return self.code


def executions(history: Path) -> list[dict[str, Any]]:
    h = History(history)
    try:
        return [{"kind": kind, "key": key, **json.loads(payload)} for _, kind, key, payload in h.audit_rows()
                if kind in ("execution", "outcome")]
    finally:
        h.close()


# -- the core: IncidentRecovery -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def diag_l2() -> Any:
    d = diagnose(DiagnoseRequest(path=str(CASE), job_id="train-7", llm=False, platform="kubernetes"))
    assert d.recovery is not None and d.recovery.level.value == "L2" and d.recovery.rule_id == "default_restart_once"
    return d


def test_an_incident_is_executed_once_even_after_a_restart(tmp_path: Path, diag_l2: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    pol = load_policy(allowing_policy(tmp_path))
    hist = tmp_path / "history.sqlite"
    rec = Recorder()
    first = IncidentRecovery(ShellExecutor(runner=rec), pol, hist)
    out = first.submit(diag_l2, "live:train-7#1", "d1").result(timeout=60)
    assert out.status == "executed", out.reason
    assert rec.calls == [["kubectl", "delete", "pods", "-n", "default", "-l", "training.kubeflow.org/job-name=train-7"]]
    # the same incident again (a later final diagnosis of it), and after a restart (a new object, the same file)
    assert first.submit(diag_l2, "live:train-7#1", "d2").result(timeout=60).status == "duplicate"
    first.close()
    again = IncidentRecovery(ShellExecutor(runner=rec), pol, hist)
    assert again.submit(diag_l2, "live:train-7#1", "d3").result(timeout=60).status == "duplicate"
    # another incident whose diagnosis is the very same plan (same job, same evidence) is not run twice either
    assert again.submit(diag_l2, "live:train-7#2", "d4").result(timeout=60).status == "duplicate"
    again.close()
    assert len(rec.calls) == 1
    rows = executions(hist)
    assert [(r["kind"], r.get("incident"), r.get("outcome")) for r in rows] == [
        ("execution", "live:train-7#1", None), ("outcome", None, "executed")]
    assert rows[0]["diagnosis_id"] == "d1" and rows[0]["level"] == "L2" and rows[0]["rule_id"] == "default_restart_once"
    assert rows[0]["key"] == rows[1]["key"] == diag_l2.recovery.idempotency_key
    assert "-> exit 0" in rows[1]["detail"]


def test_what_the_policy_does_not_allow_stays_a_recommendation(tmp_path: Path, diag_l2: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    rec = Recorder()
    cases = {
        "built-in policy": (load_policy(), "execution.live is false"),
        "L3 only": (load_policy(allowing_policy(tmp_path, levels=["L3"])), "this plan is L2"),
    }
    for name, (pol, why) in cases.items():
        r = IncidentRecovery(ShellExecutor(runner=rec), pol, tmp_path / f"{name}.sqlite")
        out = r.submit(diag_l2, "live:train-7#1", "d1").result(timeout=60)
        r.close()
        assert out.status == "skipped" and why in out.reason, (name, out)
        assert not [row for row in executions(tmp_path / f"{name}.sqlite") if row["kind"] == "execution"]
    assert rec.calls == []


def test_a_refused_or_failing_plan_is_audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    pol = load_policy(allowing_policy(tmp_path))
    # a bundle's name is no Kubernetes object name: the plan says JOB_NAME, which the executor never runs
    d = diagnose(DiagnoseRequest(path=str(CASE), job_id="run_7", llm=False, platform="kubernetes"))
    rec = Recorder()
    r = IncidentRecovery(ShellExecutor(runner=rec), pol, tmp_path / "h.sqlite")
    out = r.submit(d, "live:run_7#1", "d1").result(timeout=60)
    assert out.status == "refused" and "placeholder" in out.reason and rec.calls == []
    assert [(x["kind"], x.get("outcome")) for x in executions(tmp_path / "h.sqlite")] == [
        ("execution", None), ("outcome", "refused")]
    # a command that exits non-zero: failed, with its exit code in the audit log
    d2 = diagnose(DiagnoseRequest(path=str(CASE), job_id="train-8", llm=False, platform="kubernetes"))
    failing = Recorder(code=1)
    r2 = IncidentRecovery(ShellExecutor(runner=failing), pol, tmp_path / "h2.sqlite")
    out2 = r2.submit(d2, "live:train-8#1", "d1").result(timeout=60)
    r.close()
    r2.close()
    assert out2.status == "failed" and out2.lines[-1].endswith("-> exit 1") and len(failing.calls) == 1
    assert executions(tmp_path / "h2.sqlite")[-1]["outcome"] == "failed"


def test_diag_executor_values() -> None:
    import os

    old = os.environ.pop("DIAG_EXECUTOR", None)
    try:
        assert executor_from_env() is None
        os.environ["DIAG_EXECUTOR"] = "shel"
        with pytest.raises(ConfigError, match="not an executor"):
            executor_from_env()
        os.environ["DIAG_EXECUTOR"] = "shell"
        assert isinstance(executor_from_env(), ShellExecutor)
    finally:
        os.environ.pop("DIAG_EXECUTOR", None)
        if old is not None:
            os.environ["DIAG_EXECUTOR"] = old


# -- the service: where a live incident's final diagnosis is announced ---------------------------------------


def _service(tmp: Path, policy: Path | None, **live: Any) -> TestClient:
    # a Kubernetes site (DIAG_PLATFORM): without it the plan is the scheduler the logs show, here none (torchrun's
    # manual steps, nothing to execute)
    settings = service_settings(tmp, recovery_policy=policy, platform="kubernetes",
                                live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5, **live})
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    c = TestClient(create_app(settings), base_url="http://127.0.0.1")
    c.headers["Authorization"] = f"Bearer {ADMIN}"
    c.data_dir = settings.data_dir  # type: ignore[attr-defined]
    return c


def _send(c: TestClient, job: str, node: str, seq: int, **parts: Any) -> None:
    body = {"agent_id": f"{node}:1", "node": node, "seq": seq, "sent": T0, **parts}
    r = c.post(f"/v1/live/jobs/{job}/batches", json=body, headers={"Authorization": f"Bearer {AGENT}"})
    assert r.status_code == 200, r.text


def _fail_stop(c: TestClient, job: str) -> dict[str, Any]:
    """Both nodes' consoles of the lab run, a failure and the end of both agents; the final live view."""
    for i, n in enumerate(("node0", "node1")):
        _send(c, job, n, 0, events=[{"event": "started", "time": T0}])
        _send(c, job, n, 1, logs=[{"path": f"console_{n}.log", "offset": 0, "text": (CASE / f"console_{n}.log").read_text()}],
              events=[{"event": "failure", "time": T0 + 60 + i, "exitcode": 1},
                      {"event": "finished", "time": T0 + 61 + i, "status": "failed"}])
    return wait_until(lambda: (v := c.get(f"/v1/live/jobs/{job}").json())["provisional"] is False
                      and not v["diagnosis_pending"] and v, timeout=120)


def _spy(c: TestClient) -> list[concurrent.futures.Future[Any]]:
    """The outcomes of every plan the service hands to its IncidentRecovery."""
    ctx = c.app.state.ctx  # type: ignore[attr-defined]
    futures: list[concurrent.futures.Future[Any]] = []
    real = ctx.recovery.submit

    def submit(*a: Any) -> Any:
        futures.append(real(*a))
        return futures[-1]

    ctx.recovery.submit = submit
    return futures


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    monkeypatch.setattr(recommend_mod, "run_subprocess", rec)  # the ShellExecutor's default runner
    yield rec


def test_a_live_incident_is_executed_once_at_its_final_diagnosis(tmp_path: Path, recorder: Recorder,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    job = "live-exec-1"
    with _service(tmp_path, allowing_policy(tmp_path)) as c:
        futures = _spy(c)
        view = _fail_stop(c, job)
        wait_until(lambda: futures and futures[0].done(), timeout=60)
        out = futures[0].result()
        assert out.status == "executed", out.reason
        assert recorder.calls == [["kubectl", "delete", "pods", "-n", "default", "-l",
                                   f"training.kubeflow.org/job-name={job}"]]
        # more evidence of the same incident after the final diagnosis: diagnosed and final again, not executed again
        late = "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
        _send(c, job, "node0", 2, logs=[{"path": "late.log", "offset": 0, "text": late}])
        wait_until(lambda: len(futures) == 2 and futures[1].done(), timeout=120)
        assert futures[1].result().status == "duplicate", futures[1].result()
        assert len(recorder.calls) == 1
        rows = executions(c.data_dir / "recovery_history.sqlite")  # type: ignore[attr-defined]
        assert [(r["kind"], r.get("incident"), r.get("outcome")) for r in rows] == [
            ("execution", f"live:{job}#1", None), ("outcome", None, "executed")]
        assert rows[0]["diagnosis_id"] == view["diagnosis_id"]
        # the plan executed is the one the final diagnosis carries (the policy's, not a model's)
        d = c.get(f"/v1/diagnoses/{view['diagnosis_id']}").json()["diagnosis"]
        assert rows[0]["commands"] == d["recovery"]["commands"] and rows[0]["key"] == d["recovery"]["idempotency_key"]


def test_nothing_is_executed_without_diag_executor(tmp_path: Path, recorder: Recorder,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAG_EXECUTOR", raising=False)
    job = "live-exec-off"
    with _service(tmp_path, allowing_policy(tmp_path)) as c:
        assert c.app.state.ctx.recovery is None  # type: ignore[attr-defined]
        view = _fail_stop(c, job)
        d = c.get(f"/v1/diagnoses/{view['diagnosis_id']}").json()["diagnosis"]
        assert d["recovery"]["level"] == "L2"  # the same plan, left as a recommendation
    assert recorder.calls == []
    assert not [r for r in executions(tmp_path / "data" / "recovery_history.sqlite") if r["kind"] == "execution"]


def test_a_provisional_diagnosis_of_a_running_hang_executes_nothing(tmp_path: Path, recorder: Recorder,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # a hang of a job still running is announced with a provisional diagnosis (the job is still allocated); that
    # announcement must not act: only the final diagnosis of an incident may
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    src = FIX / "hang" / "sleep_before_allreduce"
    ranks = json.loads((src / "ranks.json").read_text())
    index = json.loads((src / "index.json").read_text())
    job = "live-exec-hang"
    with _service(tmp_path, allowing_policy(tmp_path), announce_running_s=0.5) as c:
        live = c.app.state.live
        announced: list[tuple[str, str, int]] = []
        real_on_final = live.on_final

        def on_final(*a: Any) -> None:
            real_on_final(*a)
            announced.append(a)

        live.on_final = on_final
        futures = _spy(c)
        seq = {"node0": 0, "node1": 0}
        for n in seq:
            _send(c, job, n, 0, events=[{"event": "started", "time": T0}])
            seq[n] = 1
        for snap in index:
            for n in seq:
                stacks = [{"snapshot": snap["index"], "time": snap["time"], "rank": int(r), "local_rank": v["local_rank"],
                           "pid": v["pid"], "fmt": "py-spy-json", "text": (src / snap["dir"] / f"rank-{r}.json").read_text()}
                          for r, v in ranks.items() if v["node"] == n]
                # the hang is reported with the last snapshot: the running hang is announced announce_running_s after
                # it, and on a loaded host the snapshots' own sending can take longer than that
                last = snap["index"] == index[-1]["index"]
                _send(c, job, n, seq[n], stacks=stacks,
                      events=[{"event": "hang_detected", "time": snap["time"]}] if last else [])
                seq[n] += 1
        wait_until(lambda: announced, timeout=120)
        diag_id = announced[0][1]
        rec = c.get(f"/v1/diagnoses/{diag_id}").json()
        assert rec["diagnosis"]["failure_mode"] == "fail_hang"
        assert rec["diagnosis"]["recovery"]["commands"]  # a plan there is; it is not for a provisional diagnosis
        assert c.get(f"/v1/live/jobs/{job}").json()["final_diagnosis_time"] is None
        assert futures == [] and recorder.calls == []
        assert not [r for r in executions(c.data_dir / "recovery_history.sqlite") if r["kind"] == "execution"]  # type: ignore[attr-defined]
