"""Live ETPR: the lifecycle events that node agents send feed the ETPR ledger (the ``live`` event source), so a
live job's ledger so far, with its detection, hang and diagnosis delays, is ``GET /v1/live/jobs/{id}/etpr``
and the ETPR page. Two nodes' agents report one job: their duplicate starts, detections and finishes are
merged, so the ledger is the one of the same job's single, hand-written event file."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fastapi.testclient import TestClient
from test_service_support import ADMIN, service_settings, wait_until

from diag_service.etpr import compute_ledger, load_events
from diag_service.etpr.loaders import detect_format
from diag_service.live.contract import AgentBatch
from diag_service.live.jobs import DiagnosisRef, LiveJobs, LiveSettings
from diag_service.service import create_app

FIX = Path(__file__).parent / "fixtures"
AGENT = "agent-token-0123456789abcdef"
T0 = 1_795_945_000.0


def batch(agent: str, node: str, seq: int, **parts: Any) -> AgentBatch:
    return AgentBatch.model_validate({"agent_id": agent, "node": node, "seq": seq, "sent": T0, **parts})


def buckets(events: pl.DataFrame) -> dict[str, float]:
    parts = compute_ledger(events).parts
    return {b: round(g, 6) for b, g in parts.group_by("bucket").agg(pl.col("gpu_s").sum()).iter_rows() if g}


def hung_then_killed(root: Path) -> Path:
    """A 2-node job (one rank per node): steps from T0+20, a checkpoint at T0+100, no step after T0+240, the
    hang detected by both agents (T0+300, T0+301), diagnosed at T0+310, killed (both fail at T0+330), ended."""
    jobs = LiveJobs(root, LiveSettings(), clock=lambda: T0)
    for a, n, r in (("a0", "n0", 0), ("a1", "n1", 1)):
        jobs.apply("job-h", batch(a, n, 0, events=[{"event": "started", "time": T0 + r},
                                                   {"event": "worker", "time": T0, "rank": r, "local_rank": 0, "pid": 40 + r}]))
        jobs.apply("job-h", batch(a, n, 1, events=[{"event": "first_step", "time": T0 + 20 + r, "step": 0},
                                                   {"event": "checkpoint_saved", "time": T0 + 100, "step": 50}]))
        jobs.apply("job-h", batch(a, n, 2, events=[{"event": "hang_detected", "time": T0 + 300 + r, "onset_time": T0 + 240}]))
    live = jobs._get("job-h", create=False)  # a diagnosis the service requested (its queue is not part of this test)
    assert live is not None
    live.state.diagnoses.append(DiagnosisRef(id="d1", requested_at=T0 + 302, provisional=True))
    jobs.diagnosis_finished("job-h", "d1", status="done", finished_at=T0 + 310, failure_mode="fail_hang", category="network")
    for a, n, r in (("a0", "n0", 0), ("a1", "n1", 1)):
        jobs.apply("job-h", batch(a, n, 3, events=[{"event": "failure", "time": T0 + 330, "exitcode": -9},
                                                   {"event": "finished", "time": T0 + 335 + r, "status": "failed"}]))
    jobs.close()
    return root / "job-h"


def test_two_agents_make_one_job_whose_ledger_charges_the_hang_and_the_diagnosis(tmp_path: Path) -> None:
    folder = hung_then_killed(tmp_path / "live")
    assert detect_format(folder) == detect_format(folder / "events.jsonl") == "live"
    live, issues = load_events(folder)
    # the same job written by hand, once: what a single observer of the whole job would have logged
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps(e) + "\n" for e in [
        {"job": "job-h", "event": "started", "time": T0, "gpus": 2},
        {"job": "job-h", "event": "first_step", "time": T0 + 20, "step": 0},
        {"job": "job-h", "event": "checkpoint_saved", "time": T0 + 100, "step": 50},
        {"job": "job-h", "event": "hang_detected", "time": T0 + 300, "onset_time": T0 + 240},
        {"job": "job-h", "event": "diagnosed", "time": T0 + 310, "mode": "fail_hang", "category": "network"},
        {"job": "job-h", "event": "finished", "time": T0 + 336, "status": "failed"},
    ]))
    by_hand, _ = load_events(one)
    got = buckets(live)
    assert got == buckets(by_hand)
    assert got["hang"] == 2 * 60 and got["diagnosis"] == 2 * 10  # 2 GPUs x (last step -> detected -> diagnosed)
    assert {"duplicate_event", "no_gpus", "duplicate_end"}.isdisjoint(i.code for i in issues)
    assert "live_agents_merged" in {i.code for i in issues}


def test_a_running_job_has_a_ledger_so_far_and_no_end_until_every_agent_ended(tmp_path: Path) -> None:
    jobs = LiveJobs(tmp_path, LiveSettings(), clock=lambda: T0)
    for a, n in (("a0", "n0"), ("a1", "n1")):
        jobs.apply("job-r", batch(a, n, 0, events=[{"event": "started", "time": T0}, {"event": "first_step", "time": T0 + 10}]))
    jobs.apply("job-r", batch("a0", "n0", 1, events=[{"event": "failure", "time": T0 + 50, "onset_time": T0 + 45},
                                                     {"event": "finished", "time": T0 + 52, "status": "failed"}]))
    jobs.close()
    ev, _ = load_events(tmp_path / "job-r")
    assert "finished" not in ev.get_column("event").cast(pl.String).to_list()  # node n1's part still runs
    got = buckets(ev)
    # one GPU (no rank reported); no checkpoint, so the steps before the onset (45) are lost; detected at 50;
    # the ledger so far runs to the latest event (n0's finish at 52, held until n1 ends): recovery since detection
    assert got == {"init": 10, "lost_work": 35, "detection": 5, "recovery": 2}


def test_a_hung_job_whose_agent_never_ended_is_accounted_to_its_latest_event(tmp_path: Path) -> None:
    """What the lab showed (issue 22, seed 906): both agents detect a hang, it is diagnosed; node n1's ranks die and
    its agent ends, node n0's agent reports its ranks' failure at T0+370 and is then SIGKILLed with its job, so it
    never sends `finished`. The job stayed allocated until its latest event, not until the diagnosis."""
    jobs = LiveJobs(tmp_path, LiveSettings(), clock=lambda: T0)
    for a, n, r in (("a0", "n0", 0), ("a1", "n1", 1)):
        jobs.apply("job-k", batch(a, n, 0, events=[{"event": "started", "time": T0},
                                                   {"event": "worker", "time": T0, "rank": r, "local_rank": 0, "pid": 40 + r},
                                                   {"event": "first_step", "time": T0 + 20, "step": 0},
                                                   {"event": "checkpoint_saved", "time": T0 + 100, "step": 50}]))
        jobs.apply("job-k", batch(a, n, 1, events=[{"event": "hang_detected", "time": T0 + 300, "onset_time": T0 + 240}]))
    live = jobs._get("job-k", create=False)
    assert live is not None
    live.state.diagnoses.append(DiagnosisRef(id="d1", requested_at=T0 + 302, provisional=True))
    jobs.diagnosis_finished("job-k", "d1", status="done", finished_at=T0 + 310, failure_mode="fail_hang", category="network")
    jobs.apply("job-k", batch("a1", "n1", 2, events=[{"event": "failure", "time": T0 + 330, "onset_time": T0 + 330},
                                                     {"event": "finished", "time": T0 + 335, "status": "failed"}]))
    jobs.apply("job-k", batch("a0", "n0", 2, events=[{"event": "failure", "time": T0 + 370, "onset_time": T0 + 370}]))
    jobs.close()
    ev, issues = load_events(tmp_path / "job-k")
    got = buckets(ev)
    # 2 GPUs: hang 240 -> 300, diagnosis 300 -> 310, then the hung job held its allocation until T0+370: recovery
    assert got["hang"] == 2 * 60 and got["diagnosis"] == 2 * 10
    assert got.get("recovery") == 2 * 60
    assert sum(got.values()) == 2 * 370
    assert "live_ledger_to_latest_event" in {i.code for i in issues}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("live-etpr")
    settings = service_settings(tmp, live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5})
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        yield c


def test_the_service_accounts_a_live_job_as_it_happens(client: TestClient) -> None:
    case = FIX / "lab_sigkill_root_cause_wrong"
    job = "live-etpr-stop"
    t0 = time.time() - 120  # agents' clocks: the diagnosis (service clock) comes after the detection
    for r, n in enumerate(("node0", "node1")):
        seq = iter(range(100))

        def send(**parts: Any) -> None:
            body = {"agent_id": f"{n}:1", "node": n, "seq": next(seq), "sent": t0, **parts}  # noqa: B023
            resp = client.post(f"/v1/live/jobs/{job}/batches", json=body, headers={"Authorization": f"Bearer {AGENT}"})
            assert resp.status_code == 200, resp.text

        send(events=[{"event": "started", "time": t0}, {"event": "worker", "time": t0, "rank": r, "local_rank": 0, "pid": 7 + r},
                     {"event": "first_step", "time": t0 + 20, "step": 0}])
        send(logs=[{"path": f"console_{n}.log", "offset": 0, "text": (case / f"console_{n}.log").read_text()}],
             events=[{"event": "failure", "time": t0 + 60, "onset_time": t0 + 55, "exitcode": 1}])
    folder = client.app.state.live.root / job  # type: ignore[attr-defined]
    wait_until(lambda: '"diagnosed"' in (folder / "events.jsonl").read_text(), timeout=120)
    diagnosed = next(e for e in map(json.loads, (folder / "events.jsonl").read_text().splitlines()) if e["event"] == "diagnosed")
    r = client.get(f"/v1/live/jobs/{job}/etpr")
    assert r.status_code == 200, r.text
    rep = r.json()
    b = rep["cluster"]["buckets_gpu_s"]
    assert b["detection"] == pytest.approx(2 * 5) and b["lost_work"] == pytest.approx(2 * 35)  # no checkpoint
    assert b["diagnosis"] == pytest.approx(2 * (diagnosed["time"] - (t0 + 60)), rel=1e-6)  # the delay so far, charged
    assert [a["job"] for a in rep["job_accounts"]] == [job] and rep["source"] == f"live:{job}"
    page = client.get(f"/v1/live/jobs/{job}/etpr", params={"format": "html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f"<title>ETPR report: live:{job}</title>" in page.text and "Loss waterfall" in page.text
    assert client.get("/v1/live/jobs/no-such-job/etpr").status_code == 404
    assert client.get(f"/v1/live/jobs/{job}/etpr", headers={"Authorization": f"Bearer {AGENT}"}).status_code == 403
    assert client.get(f"/v1/live/jobs/{job}").json()["job_id"] == job  # the job's own route is unchanged
