"""The service side of live jobs: node agents' batches applied exactly once to a job folder, redacted, and
diagnosed as they arrive (provisional, then final), over HTTP with the FastAPI TestClient and on the core.

The logs are the real torchrun consoles of lab runs (tests/fixtures/lab_sigkill_*), the stacks the real
py-spy dumps of a lab hang (tests/fixtures/hang); each live diagnosis is compared with the post-hoc
diagnosis of the same fixture."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_service_support import ADMIN, AGENT, READER, FakeSlack, live_client, service_settings, wait_until

from diag_service.hang import HangRequest, analyze_hang
from diag_service.live.contract import AgentBatch
from diag_service.live.jobs import STATE_FILE, LiveJobs, LiveRefused, LiveSettings, SeqGap, has_error_line
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.service import create_app

FIX = Path(__file__).parent / "fixtures"
T0 = 1_795_945_000.0


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with live_client(tmp_path_factory.mktemp("live"), live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5}) as c:
        yield c


def chunks(text: str, n: int) -> list[tuple[int, str]]:
    """``text`` cut into ``n`` pieces at arbitrary characters (mid-line), with each piece's byte offset."""
    out, off, step = [], 0, max(1, len(text) // n + 1)
    for i in range(0, len(text), step):
        piece = text[i:i + step]
        out.append((off, piece))
        off += len(piece.encode())
    return out


class Agent:
    """What ``diag watch`` sends, seq by seq, for one node."""

    def __init__(self, client: TestClient, job: str, node: str) -> None:
        self.client, self.job, self.node, self.seq = client, job, node, 0
        self.agent_id = f"{node}:4242"

    def body(self, seq: int | None = None, **parts: Any) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "node": self.node, "seq": self.seq if seq is None else seq, "sent": T0, **parts}

    def post(self, body: dict[str, Any], token: str = AGENT) -> Any:
        return self.client.post(f"/v1/live/jobs/{self.job}/batches", json=body, headers={"Authorization": f"Bearer {token}"})

    def send(self, **parts: Any) -> dict[str, Any]:
        r = self.post(self.body(**parts))
        assert r.status_code == 200, r.text
        self.seq += 1
        return r.json()



def send_hang_samples(agents: dict[str, Agent], src: Path, ranks: dict[str, Any], index: list[dict[str, Any]],
                      hang_at: int) -> None:
    """Each node's agent sends the fixture's stack snapshots of its ranks, and ``hang_detected`` with snapshot
    ``hang_at``."""
    for snap in index:
        for n, a in agents.items():
            stacks = [{"snapshot": snap["index"], "time": snap["time"], "rank": int(r), "local_rank": v["local_rank"],
                       "pid": v["pid"], "fmt": "py-spy-json", "text": (src / snap["dir"] / f"rank-{r}.json").read_text()}
                      for r, v in ranks.items() if v["node"] == n]
            a.send(stacks=stacks, events=[{"event": "hang_detected", "time": snap["time"]}] if snap["index"] == hang_at else [])

def live_job(client: TestClient, job: str) -> dict[str, Any]:
    r = client.get(f"/v1/live/jobs/{job}")
    assert r.status_code == 200, r.text
    return r.json()


def final_diagnosis(client: TestClient, job: str) -> dict[str, Any]:
    view = wait_until(lambda: (v := live_job(client, job))["provisional"] is False and v, timeout=120)
    r = client.get(f"/v1/diagnoses/{view['diagnosis_id']}")
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    return {"view": view, "diagnosis": r.json()["diagnosis"]}


def tree(folder: Path) -> dict[str, str]:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.parametrize("case", ["lab_sigkill_root_cause_wrong", "lab_sigkill_silent_rank"])
def test_two_nodes_logs_then_failure_give_the_post_hoc_diagnosis(client: TestClient, case: str) -> None:
    job = f"live-{case}"
    agents = {n: Agent(client, job, n) for n in ("node0", "node1")}
    for a in agents.values():
        a.send(events=[{"event": "started", "time": T0}])
    texts = {n: (FIX / case / f"console_{n}.log").read_text() for n in agents}
    pieces = {n: chunks(t, 5) for n, t in texts.items()}
    for i in range(5):  # interleaved, as two nodes' agents send them
        for n, a in agents.items():
            if i < len(pieces[n]):
                off, text = pieces[n][i]
                a.send(logs=[{"path": f"console_{n}.log", "offset": off, "text": text}])
    for a in agents.values():
        a.send(events=[{"event": "failure", "time": T0 + 60, "onset_time": T0 + 55, "exitcode": 1}])
    got = final_diagnosis(client, job)
    post_hoc = diagnose(DiagnoseRequest(path=str(FIX / case), job_id=job, recovery=False))
    d = got["diagnosis"]
    assert d["category"] == post_hoc.category.value
    assert d["failure_mode"] == post_hoc.failure_mode.value
    assert d["first_failing_rank"] == post_hoc.first_failing_rank
    view = got["view"]
    assert view["status"] == "failed" and view["started_time"] == T0 and view["detected_time"] == T0 + 60
    assert view["first_diagnosis_time"] <= view["final_diagnosis_time"]
    assert {a["node"] for a in view["agents"]} == {"node0", "node1"} and not any(a["stale"] for a in view["agents"])
    # the folder holds each node's console as the agent read it, whole (partial lines joined), and the ETPR events
    folder = client.data_dir / "live" / job  # type: ignore[attr-defined]
    for n, t in texts.items():
        assert (folder / n / f"console_{n}.log").read_text() == t
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    # (the first node's failure may be diagnosed before the second node's failure arrives: a "diagnosed" event between)
    lifecycle = [e for e in events if e["event"] != "diagnosed"]
    assert [e["event"] for e in lifecycle[:4]] == ["started", "started", "failure", "failure"]
    assert all(e["job"] == job for e in events) and lifecycle[2]["onset_time"] == T0 + 55
    assert any(e["event"] == "diagnosed" for e in events)
    listed = client.get("/v1/live/jobs").json()["items"]
    assert any(v["job_id"] == job and v["diagnosis_id"] == view["diagnosis_id"] for v in listed)


def test_resend_gap_and_bad_path(client: TestClient) -> None:
    job = "live-exactly-once"
    a = Agent(client, job, "node0")
    a.send(events=[{"event": "started", "time": T0}])
    a.send(logs=[{"path": "logs/rank-0.log", "offset": 0, "text": "[lab] rank 0 step 0 loss 2.77\n"}])
    folder = client.data_dir / "live" / job  # type: ignore[attr-defined]
    before = tree(folder)
    r = a.post(a.body(seq=1, logs=[{"path": "logs/rank-0.log", "offset": 0, "text": "[lab] rank 0 step 0 loss 2.77\n"}]))
    assert r.status_code == 200 and r.json()["applied"] is False and r.json()["seq"] == 1
    assert tree(folder) == before
    r = a.post(a.body(seq=5, events=[{"event": "heartbeat", "time": T0}]))
    assert r.status_code == 409 and r.json()["expected_seq"] == 2 and r.json()["reason"] == "seq_gap"
    r = a.post(a.body(seq=2, logs=[{"path": "../../escape.log", "offset": 0, "text": "x\n"}]))
    assert r.status_code == 422
    r = a.post(a.body(seq=2, logs=[{"path": "logs/../../../escape.log", "offset": 0, "text": "x\n"}]))
    assert r.status_code == 422
    r = a.post(a.body(seq=2, logs=[{"path": "logs/rank-0.log/inner.log", "offset": 0, "text": "x\n"}]))
    assert r.status_code == 422 and r.json()["reason"] == "bad_path"  # under a file of the job
    r = a.post({**a.body(seq=2), "node": "dumps"})
    assert r.status_code == 422 and r.json()["reason"] == "bad_node"
    assert tree(folder) == before
    assert a.send(events=[{"event": "heartbeat", "time": T0 + 1}])["applied"] is True  # seq 2 is still expected
    # scopes: agents post, readers read; not the other way round
    assert a.post(a.body(seq=3), token=READER).status_code == 403
    assert client.get(f"/v1/live/jobs/{job}", headers={"Authorization": f"Bearer {AGENT}"}).status_code == 403
    assert client.get("/v1/live/jobs/no-such-job").status_code == 404
    # what a dashboard sees: applied, resent and refused batches, the agents' lifecycle events
    metrics = client.get("/metrics").text
    for outcome in ("applied", "resent", "refused"):
        assert f'diag_live_batches_total{{outcome="{outcome}"}}' in metrics
    assert 'diag_live_events_total{event="started"}' in metrics


def test_secrets_never_reach_the_disk(client: TestClient) -> None:
    job = "live-secrets"
    a = Agent(client, job, "node0")
    aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    hf = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    text = (f"[default0]:export AWS_SECRET_ACCESS_KEY={aws}\n[default0]:login with {hf} ok\n"
            "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n")
    cut = text.index(hf) + 10  # the token split across two chunks
    a.send(logs=[{"path": "console.log", "offset": 0, "text": text[:cut]}])
    a.send(logs=[{"path": "console.log", "offset": len(text[:cut].encode()), "text": text[cut:]}],
           steps=[{"rank": 0, "step": 1, "start": T0, "end": T0 + 1, "note": f"token={hf}"}],
           stacks=[{"snapshot": 0, "time": T0, "rank": 0, "pid": 7, "fmt": "py-spy",
                    "text": f"Thread 7 (idle): \"MainThread\"\n    login (auth.py:3)\n        key = \"{hf}\"\n"}],
           events=[{"event": "failure", "time": T0 + 2, "cause": f"AWS_SECRET_ACCESS_KEY={aws}"}])
    final_diagnosis(client, job)
    data_dir: Path = client.data_dir  # type: ignore[attr-defined]
    for p in data_dir.rglob("*"):
        if p.is_file():
            raw = p.read_bytes()
            assert aws.encode() not in raw and hf.encode() not in raw and hf[:13].encode() not in raw, p
    assert "<REDACTED>" in (data_dir / "live" / job / "node0" / "console.log").read_text()


def test_stack_samples_of_a_hang_name_the_culprit_of_diag_hang(client: TestClient) -> None:
    src = FIX / "hang" / "sleep_before_allreduce"
    ranks = json.loads((src / "ranks.json").read_text())
    index = json.loads((src / "index.json").read_text())
    job = "live-hang"
    agents = {n: Agent(client, job, n) for n in ("node0", "node1")}
    for a in agents.values():
        a.send(events=[{"event": "started", "time": T0}])
    send_hang_samples(agents, src, ranks, index, hang_at=3)
    view = wait_until(lambda: (v := live_job(client, job))["failure_mode"] == "fail_hang" and not v["diagnosis_pending"] and v,
                      timeout=120)
    assert view["status"] == "hung"
    d = client.get(f"/v1/diagnoses/{view['diagnosis_id']}").json()["diagnosis"]
    post_hoc = analyze_hang(HangRequest(dumps_dir=str(src)))
    assert d["first_failing_rank"] == post_hoc.suspects[0].rank == 2
    folder = client.data_dir / "live" / job / "dumps"  # type: ignore[attr-defined]
    assert json.loads((folder / "ranks.json").read_text()) == ranks
    assert sorted(p.name for p in (folder / "snap-00000").iterdir()) == [f"rank-{r}.json" for r in range(4)]
    assert view["provisional"] is True  # the agents never ended: the job still hangs


def test_step_records_raise_the_streaming_slow_alarm_and_a_slow_diagnosis(client: TestClient, tmp_path: Path) -> None:
    feed = FIX / "slow" / "lab_slow_rank_compute" / "timing.jsonl"
    records = [json.loads(line) for line in feed.read_text().splitlines()]
    banner = ("[default0]:[lab] rank 0/2 node=node0 local_rank=0 pid=31149 attempt=0\n"
              "[default1]:[lab] rank 1/2 node=node0 local_rank=1 pid=31151 attempt=0\n")
    job = "live-slow"
    a = Agent(client, job, "node0")
    a.send(events=[{"event": "started", "time": records[0]["start"]}],
           logs=[{"path": "console.log", "offset": 0, "text": banner}])
    for i in range(0, len(records), 20):
        a.send(steps=records[i:i + 20])
    view = wait_until(lambda: (v := live_job(client, job))["failure_mode"] == "fail_slow" and not v["diagnosis_pending"] and v,
                      timeout=120)
    assert view["status"] == "slow" and any("rank 0 (node0) is a compute straggler" in m for m in view["slow_alarms"])
    assert view["slow_detected_time"] is not None and view["detected_time"] is None  # no failure or hang
    folder = client.data_dir / "live" / job  # type: ignore[attr-defined]
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] == "slow_detected"] == ["slow_detected"]
    # the job ends: the final diagnosis covers every record (a provisional one, asked for at the alarm, may have
    # read only the records written by then: which ones depended on the sender's pace, and the test was flaky)
    a.send(events=[{"event": "finished", "time": records[-1]["end"], "status": "succeeded"}])
    final = final_diagnosis(client, job)
    # the same evidence diagnosed after the fact
    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "console.log").write_text(banner)
    (tmp_path / "timing.jsonl").write_text(feed.read_text())
    post_hoc = diagnose(DiagnoseRequest(path=str(tmp_path), recovery=False))
    d = final["diagnosis"]
    assert (d["category"], d["first_failing_rank"]) == (post_hoc.category.value, post_hoc.first_failing_rank)
    assert post_hoc.category.value == "gpu_hardware" and post_hoc.first_failing_rank == 0


# -- the core, without HTTP ----------------------------------------------------------------------------


def batch(agent: str, node: str, seq: int, **parts: Any) -> AgentBatch:
    return AgentBatch.model_validate({"agent_id": agent, "node": node, "seq": seq, "sent": T0, **parts})


def test_a_slow_alarm_of_an_attempt_a_restart_ended_does_not_keep_the_job_slow(tmp_path: Path) -> None:
    # a new user's trial 46, r08: a 1.09x alarm of attempt 0, then a rank's failure, torchrun's restart and a normal
    # attempt 1: the view read "slow" while attempt 1 trained; an alarm after the restart is the new attempt's own
    jobs = LiveJobs(tmp_path, LiveSettings(), clock=lambda: T0)
    jobs.apply("r08", batch("a0", "node0", 0, events=[{"event": "started", "time": T0},
                                                       {"event": "first_step", "time": T0 + 7, "step": 1}]))
    live = jobs._get("r08", create=False)
    assert live is not None
    live.state.slow_alarms = ["job step time 1.09x its baseline (0.111 s) since step 36"]
    assert jobs.view("r08").status == "slow"  # type: ignore[union-attr]
    jobs.apply("r08", batch("a0", "node0", 1, events=[{"event": "failure", "time": T0 + 12, "exitcode": 1}]))
    assert jobs.view("r08").status == "failed"  # type: ignore[union-attr]
    jobs.apply("r08", batch("a0", "node0", 2, events=[{"event": "restart", "time": T0 + 19, "cause": "torchrun attempt 1"},
                                                       {"event": "progress", "time": T0 + 24, "step": 41}]))
    view = jobs.view("r08")
    assert view is not None and view.status == "running" and view.slow_alarms  # the alarm stays on record
    live.state.slow_alarms = [*live.state.slow_alarms, "job step time 1.4x its baseline since step 120"]
    live.state.slow_restarted = False  # (what a new alarm of the streaming detector does)
    assert jobs.view("r08").status == "slow"  # type: ignore[union-attr]
    jobs.close()


def test_stale_agent_is_flagged(tmp_path: Path) -> None:
    now = [T0]
    jobs = LiveJobs(tmp_path, LiveSettings(heartbeat_s=10), clock=lambda: now[0])
    jobs.apply("j1", batch("a0", "node0", 0, events=[{"event": "started", "time": T0}]))
    jobs.apply("j1", batch("a1", "node1", 0, events=[{"event": "started", "time": T0}]))
    now[0] = T0 + 25
    jobs.apply("j1", batch("a0", "node0", 1, events=[{"event": "heartbeat", "time": now[0]}]))
    jobs.apply("j1", batch("a1", "node1", 1, events=[{"event": "finished", "time": now[0], "status": "succeeded"}]))
    now[0] = T0 + 50
    view = jobs.view("j1")
    assert view is not None
    stale = {a.agent_id: a.stale for a in view.agents}
    assert stale == {"a0": False, "a1": False}  # 25 s < 3 x 10 s; a1 ended: never stale
    now[0] = T0 + 56
    stale = {a.agent_id: a.stale for a in jobs.view("j1").agents}  # type: ignore[union-attr]
    assert stale == {"a0": True, "a1": False}
    jobs.close()


def test_half_applied_batch_is_rolled_back_and_applied_once(tmp_path: Path) -> None:
    jobs = LiveJobs(tmp_path)
    line = "[default0]:[lab] rank 0 step 0 loss 2.7733\n"
    jobs.apply("j2", batch("a0", "node0", 0, logs=[{"path": "c.log", "offset": 0, "text": line}],
                           events=[{"event": "started", "time": T0}]))
    folder = tmp_path / "j2"
    # the service dies after writing seq 1's files and before recording it
    with open(folder / "node0" / "c.log", "a") as fh:
        fh.write(line)
    with open(folder / "events.jsonl", "a") as fh:
        fh.write('{"job": "j2", "event": "progress"')
    jobs.close()
    again = LiveJobs(tmp_path)
    ack, _ = again.apply("j2", batch("a0", "node0", 1, logs=[{"path": "c.log", "offset": len(line), "text": line}],
                                      events=[{"event": "progress", "time": T0 + 1, "step": 1}]))
    assert ack.applied
    assert (folder / "node0" / "c.log").read_text() == line * 2
    assert [json.loads(x)["event"] for x in (folder / "events.jsonl").read_text().splitlines()] == ["started", "progress"]
    ack, _ = again.apply("j2", batch("a0", "node0", 1, logs=[{"path": "c.log", "offset": len(line), "text": line}]))
    assert not ack.applied and (folder / "node0" / "c.log").read_text() == line * 2
    with pytest.raises(SeqGap) as gap:
        again.apply("j2", batch("a0", "node0", 3))
    assert gap.value.expected_seq == 2
    state = json.loads((folder / STATE_FILE).read_text())
    assert state["agents"]["a0"]["last_seq"] == 1
    again.close()


def test_a_batch_that_fails_half_way_leaves_no_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = LiveJobs(tmp_path)
    line = "[default0]:[lab] rank 0 step 0 loss 2.7733\n"
    jobs.apply("j6", batch("a0", "n0", 0, logs=[{"path": "a.log", "offset": 0, "text": line}]))
    folder = tmp_path / "j6"
    before = {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    seq1 = batch("a0", "n0", 1, logs=[{"path": "a.log", "offset": len(line), "text": line},
                                      {"path": "b.log", "offset": 0, "text": line}],
                 events=[{"event": "progress", "time": T0, "step": 1}],
                 stacks=[{"snapshot": 0, "time": T0, "rank": 0, "pid": 1, "fmt": "py-spy", "text": "Thread 1 (idle)\n"}])

    def disk_full(*_a: Any) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(jobs, "_write_stacks", disk_full)
        with pytest.raises(OSError):
            jobs.apply("j6", seq1)
    assert {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    ack, _ = jobs.apply("j6", seq1)
    assert ack.applied
    assert (folder / "n0" / "a.log").read_text() == line * 2 and (folder / "n0" / "b.log").read_text() == line
    assert len((folder / "events.jsonl").read_text().splitlines()) == 1
    jobs.close()


def test_batch_bounds(tmp_path: Path) -> None:
    jobs = LiveJobs(tmp_path, LiveSettings(max_files_per_job=2))
    big = [{"path": f"w/{i}.log", "offset": 0, "text": "x" * (1 << 20)} for i in range(9)]  # 9 MiB > MAX_BATCH_CHARS
    with pytest.raises(LiveRefused) as exc:
        jobs.apply("j5", batch("a0", "n0", 0, logs=big))
    assert exc.value.status == 413 and exc.value.reason == "batch_size"
    with pytest.raises(LiveRefused) as exc:
        jobs.apply("j5", batch("a0", "n0", 0, logs=[{"path": f"w/{i}.log", "offset": 0, "text": "x\n"} for i in range(3)]))
    assert exc.value.status == 413 and exc.value.reason == "too_many_files"
    ack, _ = jobs.apply("j5", batch("a0", "n0", 0, logs=[{"path": "w/0.log", "offset": 0, "text": "x\n"}]))
    assert ack.applied and ack.seq == 0  # a refused batch consumed no seq
    jobs.close()


def test_restarted_log_keeps_the_old_text_and_offsets_skip_what_was_written(tmp_path: Path) -> None:
    jobs = LiveJobs(tmp_path)
    jobs.apply("j3", batch("a0", "n0", 0, logs=[{"path": "w/0.log", "offset": 0, "text": "one\ntwo\n"}]))
    # the agent read the file again from an earlier offset: only the new part is appended
    jobs.apply("j3", batch("a0", "n0", 1, logs=[{"path": "w/0.log", "offset": 4, "text": "two\nthree\n"}]))
    jobs.apply("j3", batch("a0", "n0", 2, logs=[{"path": "w/0.log", "offset": 0, "text": "fresh\n", "restarted": True}]))
    d = tmp_path / "j3" / "n0" / "w"
    assert (d / "0.log.1").read_text() == "one\ntwo\nthree\n"
    assert (d / "0.log").read_text() == "fresh\n"
    jobs.close()


def test_a_burst_gives_one_diagnosis_provisional_then_final(tmp_path: Path) -> None:
    calls: list[bool] = []
    jobs: LiveJobs

    def submit(job_id: str, folder: Path, provisional: bool) -> str:
        calls.append(provisional)
        diag_id = f"d{len(calls)}"
        threading.Thread(target=lambda: jobs.diagnosis_finished(job_id, diag_id, status="done", finished_at=time.time(),
                                                                 category="user_code", summary="x")).start()
        return diag_id

    jobs = LiveJobs(tmp_path, LiveSettings(debounce_s=0.3, settle_s=0.5), submit=submit)
    text = "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    off = 0
    for seq in range(20):
        _, trigger = jobs.apply("j4", batch("a0", "n0", seq, logs=[{"path": "c.log", "offset": off, "text": text}]))
        off += len(text)
        assert trigger
    wait_until(lambda: calls, timeout=10)
    jobs.apply("j4", batch("a0", "n0", 20, events=[{"event": "failure", "time": T0}]))
    view = wait_until(lambda: (v := jobs.view("j4")) is not None and v.provisional is False and v, timeout=10)
    assert calls[0] is True and calls[-1] is False
    assert len(calls) <= 3  # one for the burst, maybe one for the failure batch, one final; never twenty
    assert view.final_diagnosis_time is not None and view.first_diagnosis_time <= view.final_diagnosis_time
    jobs.close()


def test_a_dead_agent_does_not_hold_the_final_diagnosis_back(tmp_path: Path) -> None:
    calls: list[bool] = []
    jobs: LiveJobs

    def submit(job_id: str, folder: Path, provisional: bool) -> str:
        calls.append(provisional)
        diag_id = f"d{len(calls)}"
        threading.Thread(target=lambda: jobs.diagnosis_finished(job_id, diag_id, status="done", finished_at=time.time())).start()
        return diag_id

    jobs = LiveJobs(tmp_path, LiveSettings(debounce_s=0.05, settle_s=0.1, heartbeat_s=0.1, stale_after=3), submit=submit)
    jobs.apply("j7", batch("a1", "n1", 0, events=[{"event": "started", "time": T0}]))  # then never heard of again
    text = "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    jobs.apply("j7", batch("a0", "n0", 0, logs=[{"path": "c.log", "offset": 0, "text": text}],
                           events=[{"event": "failure", "time": T0}]))
    view = wait_until(lambda: (v := jobs.view("j7")) is not None and v.provisional is False and v, timeout=10)
    assert [a.stale for a in sorted(view.agents, key=lambda a: a.agent_id)] == [False, True]
    assert calls[-1] is False
    jobs.close()


def test_error_prefilter() -> None:
    assert has_error_line("[default1]:[rank1]: RuntimeError: Connection closed by peer\n")
    assert not has_error_line("[default0]:[lab] rank 0 step 10 loss 2.7723\n")


def test_flight_recorder_dumps_reach_the_hang_analysis(client: TestClient) -> None:
    # Real Flight Recorder pickles (4 gloo ranks; rank 3 slept before its tensor-parallel all-reduce), sent by
    # the agents of two nodes with one log line each: the live diagnosis names rank 3 as diag hang does.
    import base64

    src = FIX / "flight_recorder" / "missing_tp"
    job = "live-fr"
    for n, ranks in (("node0", (0, 1)), ("node1", (2, 3))):
        a = Agent(client, job, n)
        a.send(events=[{"event": "started", "time": T0}],
               logs=[{"path": "console.log", "offset": 0, "text": f"[lab] node {n} step 4 loss 2.31\n"}])
        a.send(events=[{"event": "hang_detected", "time": T0 + 30, "onset_time": T0}],
               fr=[{"rank": r, "name": f"nccl_trace_rank_{r}", "time": T0 + 31,
                    "data": base64.b64encode((src / f"nccl_trace_rank_{r}").read_bytes()).decode()} for r in ranks])
    view = wait_until(lambda: (v := live_job(client, job))["failure_mode"] == "fail_hang" and not v["diagnosis_pending"] and v,
                      timeout=120)
    d = client.get(f"/v1/diagnoses/{view['diagnosis_id']}").json()["diagnosis"]
    post_hoc = diagnose(DiagnoseRequest(path=str(src), recovery=False))
    assert d["failure_mode"] == post_hoc.failure_mode.value == "fail_hang"
    assert d["first_failing_rank"] == post_hoc.first_failing_rank == 3
    stored = client.data_dir / "live" / job / "fr" / "nccl_trace_rank_3"  # type: ignore[attr-defined]
    assert stored.read_bytes() == (src / "nccl_trace_rank_3").read_bytes()


# -- announcements: the final diagnosis of each incident, once ----------------------------------------------


def test_only_final_diagnoses_of_an_incident_go_to_on_final(tmp_path: Path) -> None:
    calls: list[bool] = []
    finals: list[tuple[str, str, int]] = []
    jobs: LiveJobs

    def submit(job_id: str, folder: Path, provisional: bool) -> str:
        calls.append(provisional)
        diag_id = f"d{len(calls)}"
        threading.Thread(target=lambda: jobs.diagnosis_finished(job_id, diag_id, status="done", finished_at=time.time(),
                                                                 category="user_code", failure_mode="fail_stop")).start()
        return diag_id

    jobs = LiveJobs(tmp_path, LiveSettings(debounce_s=0.05, settle_s=0.2), submit=submit,
                    on_final=lambda *a: finals.append(a))
    text = "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    for seq, (agent, node) in enumerate((("a0", "n0"), ("a1", "n1"))):
        jobs.apply("j8", batch(agent, node, 0, events=[{"event": "started", "time": T0}]))
        jobs.apply("j8", batch(agent, node, 1, logs=[{"path": "c.log", "offset": 0, "text": text}],
                               events=[{"event": "failure", "time": T0 + 10 + seq}]))
    wait_until(lambda: calls and calls[0] is True, timeout=10)
    assert finals == []  # provisional: nobody is told yet
    for agent, node in (("a0", "n0"), ("a1", "n1")):
        jobs.apply("j8", batch(agent, node, 2, events=[{"event": "finished", "time": T0 + 20, "status": "failed"}]))
    wait_until(lambda: finals, timeout=10)
    assert finals == [("j8", f"d{len(calls)}", 1)] and calls[-1] is False  # both nodes' failures: one incident
    # the job is relaunched and fails again: the next incident
    jobs.apply("j8", batch("a0", "n0", 3, events=[{"event": "restart", "time": T0 + 30},
                                                  {"event": "failure", "time": T0 + 40},
                                                  {"event": "finished", "time": T0 + 41, "status": "failed"}]))
    wait_until(lambda: len(finals) == 2, timeout=10)
    assert finals[1][2] == 2 and all(p is False for p in calls[-1:])
    jobs.close()


def test_an_outcome_recorded_twice_is_announced_once(tmp_path: Path) -> None:
    # the service records an outcome from the diagnosis's done callback and from a view's sweep of pending
    # diagnoses; when both see the same finished diagnosis, the incident is still announced once
    finals: list[tuple[str, str, int]] = []
    submitted: list[str] = []

    def submit(job_id: str, folder: Path, provisional: bool) -> str:
        submitted.append(f"d{len(submitted) + 1}")
        return submitted[-1]

    jobs = LiveJobs(tmp_path, LiveSettings(debounce_s=0.05, settle_s=0.05), submit=submit,
                    on_final=lambda *a: finals.append(a))
    text = "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    jobs.apply("j9", batch("a0", "n0", 0, events=[{"event": "started", "time": T0}]))
    jobs.apply("j9", batch("a0", "n0", 1, logs=[{"path": "c.log", "offset": 0, "text": text}],
                           events=[{"event": "failure", "time": T0 + 10},
                                   {"event": "finished", "time": T0 + 11, "status": "failed"}]))
    wait_until(lambda: jobs.pending_diagnoses("j9"), timeout=10)
    diag_id = jobs.pending_diagnoses("j9")[0]
    for _ in range(2):
        jobs.diagnosis_finished("j9", diag_id, status="done", finished_at=time.time(), category="user_code",
                                failure_mode="fail_stop")
    assert finals == [("j9", diag_id, 1)]
    events = (tmp_path / "j9" / "events.jsonl").read_text().splitlines()
    assert sum('"diagnosed"' in e for e in events) == 1
    jobs.close()


@pytest.fixture(scope="module")
def hooks() -> Iterator[FakeSlack]:
    with FakeSlack("unused") as fake:
        yield fake


@pytest.fixture(scope="module")
def alerting(tmp_path_factory: pytest.TempPathFactory, hooks: FakeSlack) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("live-alerts")
    # a running hang is announced only after an hour here: these tests are about final diagnoses
    settings = service_settings(tmp, live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5,
                                           "announce_running_s": 3600},
                                webhooks=[{"url": f"{hooks.url}/hooks/slack", "format": "slack"},
                                          {"url": f"{hooks.url}/hooks/mattermost", "format": "mattermost"}],
                                public_url="http://diag.example.test")
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        yield c


def posts_for(hooks: FakeSlack, name: str, job: str) -> list[dict[str, Any]]:
    return [p for p in hooks.posted(f"hooks/{name}") if job in json.dumps(p)]


def test_a_fail_stop_is_announced_once_with_its_final_diagnosis(alerting: TestClient, hooks: FakeSlack) -> None:
    case = "lab_sigkill_root_cause_wrong"
    job = "live-alert-stop"
    agents = {n: Agent(alerting, job, n) for n in ("node0", "node1")}
    for n, a in agents.items():
        text = (FIX / case / f"console_{n}.log").read_text()
        a.send(events=[{"event": "started", "time": T0}])
        for off, piece in chunks(text, 4):
            a.send(logs=[{"path": f"console_{n}.log", "offset": off, "text": piece}])
        a.send(events=[{"event": "failure", "time": T0 + 60, "onset_time": T0 + 55, "exitcode": 1}])
    got = final_diagnosis(alerting, job)
    first = got["view"]["diagnosis_id"]
    wait_until(lambda: posts_for(hooks, "slack", job) and posts_for(hooks, "mattermost", job), timeout=30)
    slack = posts_for(hooks, "slack", job)
    d = got["diagnosis"]
    assert len(slack) == 1
    # the bot's own view of the same Diagnosis: header, root cause, the Confirm / Correct buttons of this diagnosis
    assert slack[0]["blocks"][0]["text"]["text"].startswith(f"{job}: {d['category']} ({d['failure_mode']})")
    assert any(b.get("block_id") == f"diag:{first}" for b in slack[0]["blocks"])
    mm = posts_for(hooks, "mattermost", job)[0]["attachments"][0]
    assert mm["title"] == f"Job {job}: {d['category']} ({d['failure_mode']})" and mm["title_link"].endswith(first)
    # more evidence of the same incident arrives after the final diagnosis: diagnosed again, announced no more
    agents["node0"].send(logs=[{"path": "late.log", "offset": 0,
                                "text": "[default0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"}])
    wait_until(lambda: (v := live_job(alerting, job))["provisional"] is False and v["diagnosis_id"] != first, timeout=120)
    store = alerting.app.state.ctx.store  # type: ignore[attr-defined]
    # (the second final diagnosis is queued behind the first; a loaded CI machine needs more than 30 s)
    assert wait_until(lambda: store.alert_count(f"incident:{job}#1") == 2, timeout=120)
    assert len(posts_for(hooks, "slack", job)) == 1


def test_a_hang_is_announced_when_final_not_per_provisional_diagnosis(alerting: TestClient, hooks: FakeSlack) -> None:
    src = FIX / "hang" / "sleep_before_allreduce"
    ranks = json.loads((src / "ranks.json").read_text())
    index = json.loads((src / "index.json").read_text())
    job = "live-alert-hang"
    agents = {n: Agent(alerting, job, n) for n in ("node0", "node1")}
    for a in agents.values():
        a.send(events=[{"event": "started", "time": T0}])
    send_hang_samples(agents, src, ranks, index, hang_at=0)
    wait_until(lambda: (v := live_job(alerting, job))["failure_mode"] == "fail_hang" and not v["diagnosis_pending"], timeout=120)
    store = alerting.app.state.ctx.store  # type: ignore[attr-defined]
    # provisional (the job still hangs): no alert was even claimed (claims happen before the outcome is recorded)
    assert store.alert_count(f"hang:{job}") == 0 and store.alert_count(f"incident:{job}#1") == 0
    for a in agents.values():
        a.send(events=[{"event": "finished", "time": T0 + 300, "status": "failed"}])
    got = final_diagnosis(alerting, job)
    wait_until(lambda: posts_for(hooks, "slack", job), timeout=30)
    slack = posts_for(hooks, "slack", job)
    assert len(slack) == 1 and got["diagnosis"]["failure_mode"] == "fail_hang"
    assert slack[0]["blocks"][0]["text"]["text"].startswith(f"{job}: ")


@pytest.fixture(scope="module")
def alerting_running(tmp_path_factory: pytest.TempPathFactory, hooks: FakeSlack) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("live-alerts-running")
    settings = service_settings(tmp, live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5,
                                           "announce_running_s": 0.5},
                                webhooks=[{"url": f"{hooks.url}/hooks/slack", "format": "slack"}],
                                public_url="http://diag.example.test")
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        yield c


def test_a_hang_of_a_job_still_running_is_announced_once_without_waiting_for_its_agents(
        alerting_running: TestClient, hooks: FakeSlack) -> None:
    # a hung job stays allocated: its agents keep sampling and never send "finished"; the on-call engineer
    # must hear of it while it hangs, once, not when someone finally kills it
    src = FIX / "hang" / "sleep_before_allreduce"
    ranks = json.loads((src / "ranks.json").read_text())
    index = json.loads((src / "index.json").read_text())
    job = "live-alert-hang-running"
    agents = {n: Agent(alerting_running, job, n) for n in ("node0", "node1")}
    for a in agents.values():
        a.send(events=[{"event": "started", "time": T0}])
    send_hang_samples(agents, src, ranks, index, hang_at=0)
    # no agent ends: the announcement comes from a diagnosis of the running job
    assert wait_until(lambda: posts_for(hooks, "slack", job), timeout=60)
    view = live_job(alerting_running, job)
    assert view["status"] != "finished" and view["final_diagnosis_time"] is None
    slack = posts_for(hooks, "slack", job)
    assert len(slack) == 1 and slack[0]["blocks"][0]["text"]["text"].startswith(f"{job}: ")
    store = alerting_running.app.state.ctx.store  # type: ignore[attr-defined]
    assert store.alert_count(f"incident:{job}#1") >= 1
    # more samples of the same hang: more provisional diagnoses, no second announcement
    for n, a in agents.items():
        snap = index[-1]
        stacks = [{"snapshot": snap["index"] + 1, "time": snap["time"] + 5, "rank": int(r), "local_rank": v["local_rank"],
                   "pid": v["pid"], "fmt": "py-spy-json", "text": (src / snap["dir"] / f"rank-{r}.json").read_text()}
                  for r, v in ranks.items() if v["node"] == n]
        a.send(stacks=stacks)
    wait_until(lambda: not live_job(alerting_running, job)["diagnosis_pending"], timeout=60)
    time.sleep(1.0)
    assert len(posts_for(hooks, "slack", job)) == 1



def test_error_prefilter_follows_the_signature_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site signature on ``$DIAG_SIGNATURES_PATH`` makes its line a candidate for "diagnose again", as it is
    for the pipeline, also when the filter was used before the variable was set (no copy kept from then)."""
    line = "[default0]:lustre: OST0003 quota exhausted for project 42\n"
    site = tmp_path / "site"
    site.mkdir()
    (site / "lustre.yaml").write_text(
        "version: 1\nsignatures:\n  - id: lustre_quota_exhausted\n    name: Lustre project quota\n"
        "    patterns: ['OST\\d+ quota exhausted']\n    category: storage\n    priority: 70\n    confidence: 0.9\n"
        "    explanation: The project's Lustre quota is exhausted.\n    source: https://doc.lustre.org/\n"
        "    examples: ['lustre: OST0003 quota exhausted for project 42']\n"
    )
    monkeypatch.delenv("DIAG_SIGNATURES_PATH", raising=False)
    assert not has_error_line(line)
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(site))
    assert has_error_line(line)
