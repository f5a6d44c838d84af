"""Watching the watchers: a live job that restarts again and again without training progress (a restart storm),
and a node behind the failures of several jobs (a repeat offender), are findings of their own with a recovery rule
each, through the service's HTTP API as node agents feed it.

The storm's logs are the real torchrun consoles of a lab run (tests/fixtures/lab_sigkill_silent_rank, an
unexplained fail-stop), sent again on every attempt as ``diag watch`` sends a console that torchrun restarted; the
offender's is a worker console with NCCL's InfiniBand completion error on gpu-node-007 (as NCCL_DEBUG=WARN writes
it through ``--tee``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_service_support import AGENT, READER, live_client, wait_until

from diag_service.bot.alerts import Alert
from diag_service.domain import Diagnosis, JobRestarts
from diag_service.live.jobs import LiveJobs, LiveSettings
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.recovery import History, load_policy, recommend

FIX = Path(__file__).parent / "fixtures"
CASE = FIX / "lab_sigkill_silent_rank"
T0 = 1_795_945_000.0
NODES = ("node0", "node1")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with live_client(tmp_path_factory.mktemp("watchers"), live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5}) as c:
        yield c


class Agent:
    """What ``diag watch`` sends, seq by seq, for one node of one job."""

    def __init__(self, client: TestClient, job: str, node: str) -> None:
        self.client, self.job, self.node, self.seq = client, job, node, 0

    def send(self, **parts: Any) -> None:
        body = {"agent_id": f"{self.node}:4242", "node": self.node, "seq": self.seq, "sent": T0, **parts}
        r = self.client.post(f"/v1/live/jobs/{self.job}/batches", json=body, headers={"Authorization": f"Bearer {AGENT}"})
        assert r.status_code == 200, r.text
        self.seq += 1


def final(client: TestClient, job: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live view once its latest diagnosis is final, and that diagnosis."""
    view = wait_until(lambda: (v := client.get(f"/v1/live/jobs/{job}").json())["provisional"] is False
                      and not v["diagnosis_pending"] and v, timeout=180)
    r = client.get(f"/v1/diagnoses/{view['diagnosis_id']}")
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    return view, r.json()["diagnosis"]


def run_attempts(client: TestClient, job: str, steps: list[int]) -> None:
    """Attempt ``k`` of the job on two nodes: each node's agent sends the console of the attempt (a restarted file
    after the first), the steps the attempt reached beyond any before it (``steps[k]``: the highest step of the
    attempt; the agent reports a step only past the highest it saw), its failure; then torchrun relaunches (every
    agent sends ``restart``), ten minutes after the attempt began, until the last attempt, which fails for good."""
    agents = {n: Agent(client, job, n) for n in NODES}
    best = -1
    for k, top in enumerate(steps):
        t = T0 + 600 * k
        for n, a in agents.items():
            text = (CASE / f"console_{n}.log").read_text()
            text = re.sub(r"step (\d+)", lambda m, top=top: f"step {int(m[1]) + top - 50}", text)  # the attempt's steps
            events: list[dict[str, Any]] = [{"event": "started" if k == 0 else "restart", "time": t}]
            if k == 0:
                events.append({"event": "first_step", "time": t + 30, "step": 1})
            if top > best:
                events.append({"event": "progress", "time": t + 200, "step": top})
            a.send(events=events)
            a.send(logs=[{"path": f"console_{n}.log", "offset": 0, "text": text, "restarted": k > 0}],
                   events=[{"event": "failure", "time": t + 300, "exitcode": 1}])
        best = max(best, top)


def test_restarts_without_progress_are_a_storm_with_its_own_plan(client: TestClient) -> None:
    # each attempt trains to step 50 again and dies there: three relaunches, no step beyond 50
    job = "train-storm"
    run_attempts(client, job, [50, 50, 50, 50])
    view, d = final(client, job)
    storm = "restart storm: 3 restarts in 20 min without training progress (no step beyond 50)"
    assert view["restarts"]["count"] == 3  # two agents' restart events per relaunch: one restart each
    assert view["restarts"]["without_progress"] == 3
    assert view["findings"] == [storm]
    assert d["restarts"]["count"] == 3 and storm in d["findings"]
    assert (d["recovery"]["level"], d["recovery"]["rule_id"]) == ("L4", "restart_storm")
    alert = Alert.from_diagnosis(Diagnosis.model_validate(d), view["diagnosis_id"], job_id=job)
    assert alert.fields["Recurring"] == storm


def test_restarts_with_progress_between_them_are_no_storm(client: TestClient) -> None:
    # every attempt resumes from its checkpoint and trains further than the one before it
    job = "train-progress"
    run_attempts(client, job, [50, 100, 150, 200])
    view, d = final(client, job)
    assert view["restarts"]["count"] == 3 and view["restarts"]["without_progress"] == 0
    assert view["findings"] == []
    assert d["restarts"]["count"] == 3
    assert not [f for f in d["findings"] if f.startswith("restart storm")]
    assert d["recovery"]["rule_id"] != "restart_storm"


def test_a_storm_ends_with_progress_and_one_relaunch_is_counted_once(tmp_path: Path) -> None:
    jobs = LiveJobs(tmp_path, LiveSettings(), storm_restarts=3)

    def send(agent: str, seq: int, *events: dict[str, Any]) -> None:
        jobs.apply("j", _batch(agent, agent.replace("a", "n"), seq, events=list(events)))

    send("a0", 0, {"event": "started", "time": T0}, {"event": "first_step", "time": T0 + 5, "step": 1},
         {"event": "progress", "time": T0 + 50, "step": 400})
    for i in range(3):  # a relaunch without a failure event: each agent reports it once
        send("a0", 1 + i, {"event": "restart", "time": T0 + 100 * (i + 1)})
        send("a1", i, {"event": "restart", "time": T0 + 100 * (i + 1) + 2})
    view = jobs.view("j")
    assert view is not None and view.restarts is not None
    assert (view.restarts.count, view.restarts.without_progress, view.restarts.highest_step) == (3, 3, 400)
    assert view.findings == ["restart storm: 3 restarts in 3 min without training progress (no step beyond 400)"]
    # a step reported late, from between the last two relaunches, is progress between them, not after the last
    send("a1", 3, {"event": "progress", "time": T0 + 250, "step": 401})
    view = jobs.view("j")
    assert view is not None and view.restarts is not None
    assert (view.restarts.count, view.restarts.without_progress) == (3, 1) and view.findings == []
    send("a0", 4, {"event": "progress", "time": T0 + 360, "step": 401})  # not beyond the highest before the last
    assert jobs.view("j").restarts.without_progress == 1  # type: ignore[union-attr]
    send("a0", 5, {"event": "progress", "time": T0 + 420, "step": 402})
    view = jobs.view("j")
    assert view is not None and view.restarts is not None
    assert (view.restarts.count, view.restarts.without_progress) == (3, 0) and view.findings == []
    jobs.close()


def _batch(agent: str, node: str, seq: int, **parts: Any) -> Any:
    from diag_service.live.contract import AgentBatch

    return AgentBatch.model_validate({"agent_id": agent, "node": node, "seq": seq, "sent": T0, **parts})


NCCL_IB = (
    "[default0]:[lab] rank 0 step 120 loss 2.4410\n"
    "[default4]:gpu-node-007:3468:3905 [4] NCCL INFO Channel 00/0 : 4[4] -> 12[4] [send] via NET/IB/0\n"
    "[default4]:gpu-node-007:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
    "10.0.210.236<{port}> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
    "[default4]:[rank4]:[E726 13:20:02.118273 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 4] "
    "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network "
    "error, NCCL version 2.21.5\n"
)


def test_a_node_behind_three_jobs_failures_is_a_repeat_offender(client: TestClient) -> None:
    ctx = client.app.state.ctx  # type: ignore[attr-defined]

    def faults(node: str) -> int:
        h = History(ctx.history_path)
        try:
            return h.node_faults(node, 7 * 86400)
        finally:
            h.close()

    offenders = client.get("/v1/nodes/offenders", headers={"Authorization": f"Bearer {READER}"})
    assert offenders.status_code == 200 and offenders.json()["items"] == []
    plans, findings = [], []
    for i, job in enumerate(("pretrain-a", "sft-b", "eval-c")):
        a = Agent(client, job, "gpu-node-007")
        a.send(events=[{"event": "started", "time": T0 + 3600 * i}])
        a.send(logs=[{"path": "console.log", "offset": 0, "text": NCCL_IB.format(port=54862 + i)}],
               events=[{"event": "failure", "time": T0 + 3600 * i + 300, "exitcode": 1},
                       {"event": "finished", "time": T0 + 3600 * i + 301, "status": "failed"}])
        view, d = final(client, job)
        assert d["faulty_nodes"] == ["gpu-node-007"]
        wait_until(lambda i=i: len(client.get("/v1/nodes/offenders").json()["items"]) == (i == 2)
                   and faults("gpu-node-007") == i + 1, timeout=30)  # the incident is recorded when it is announced
        plans.append((d["recovery"]["level"], d["recovery"]["rule_id"]))
        findings.append([f for f in d["findings"] if f.startswith("repeat-offender node")])
    assert plans[:2] == [("L3", "fabric_link_cordon")] * 2
    assert plans[2] == ("L3", "lemon_node")
    assert findings == [[], [], ["repeat-offender node: gpu-node-007 was named in the failures of 3 jobs in 7 days "
                                 "(this one and sft-b, pretrain-a)"]]
    got = client.get("/v1/nodes/offenders", headers={"Authorization": f"Bearer {READER}"}).json()
    assert (got["threshold"], got["window_days"]) == (3, 7)
    # one fault per incident, however many provisional diagnoses each job had
    assert [(o["node"], o["jobs"], o["faults"], o["job_ids"]) for o in got["items"]] == [
        ("gpu-node-007", 3, 3, ["eval-c", "sft-b", "pretrain-a"])]
    # the outcome of the last final diagnosis replayed (a restart of the service, a view's sweep): nothing new
    ctx.alert_live_diagnosis("eval-c", view["diagnosis_id"], 1)
    assert client.get("/v1/nodes/offenders").json() == got
    assert faults("gpu-node-007") == 3
    # agents cannot read it
    assert client.get("/v1/nodes/offenders", headers={"Authorization": f"Bearer {AGENT}"}).status_code == 403


def test_the_same_failure_after_each_restart_escalates(tmp_path: Path) -> None:
    # a job that dies the same way on every attempt gives the same evidence each time: the plan of the attempt after
    # a restart is not the first attempt's plan replayed from the history
    d = diagnose(DiagnoseRequest(path=str(CASE), job_id="train-same", recovery=False))
    hist = History(tmp_path / "h.sqlite")
    plans = []
    for k in range(4):
        dk = d.model_copy(update={"restarts": JobRestarts(count=k, without_progress=k, highest_step=50)})
        plan = recommend(dk, load_policy(), hist, record_counts=False)
        plans.append((plan.level.value, plan.rule_id))
    assert plans == [("L2", "default_restart_once"), ("L4", "unknown_second_time"), ("L4", "unknown_second_time"),
                     ("L4", "restart_storm")]
    assert hist.job_restarts("train-same") == 0  # a live job's restarts are its events', not the plans recorded
    hist.close()
