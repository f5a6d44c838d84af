"""No secret reaches the service's disk, whatever path it comes in by (issue 19, finding 4).

Each format of the catalogue (knowledge_base/secrets.yaml, one example line per entry), a multi-line PEM
private key and a multi-line GCP service-account JSON block go through every way text enters the service:
an upload, a path job under the allowed root, a live agent's batches, a slow-step stream, feedback, and the
knowledge base (add and search). Then every file under the data dir and the knowledge base's folder (the
SQLite database and its journal included) is read as bytes and searched for each raw secret.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_service_support import ADMIN, SLOW_FEED, FakeSlack, build_small_kb, service_settings, tar_gz, wait_until

from diag_service.redact.catalog import builtin_secret_formats
from diag_service.service import create_app

AGENT = "agent-token-0123456789abcdef"
T0 = 1_795_945_000.0

PEM_BODY = [
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo",
]
PEM = ["-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----"]
GCP_KEY_ID = "3f9a1c0b7e5d2a4f6b8c0d1e2f3a4b5c6d7e8f90"
GCP_KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
GCP_SA = json.dumps({
    "type": "service_account", "project_id": "acme-train", "private_key_id": GCP_KEY_ID,
    "private_key": f"-----BEGIN PRIVATE KEY-----\n{GCP_KEY_BODY}\n-----END PRIVATE KEY-----\n",
    "client_email": "trainer@acme-train.iam.gserviceaccount.com", "client_id": "104857600000000000001",
}, indent=2).splitlines()

#: (line, raw secret) per catalogue entry: its first example.
FORMAT_LINES = [(f.examples[0].line, f.examples[0].secret) for f in builtin_secret_formats()]
SECRETS = [s for _, s in FORMAT_LINES] + PEM_BODY + [GCP_KEY_ID, GCP_KEY_BODY]


def console_log(prefix: str = "[default0]:") -> str:
    """A rank's console where every secret sits in an error line (so that it becomes an event), then a
    traceback whose message is followed by a PEM key and a service-account JSON block."""
    out = [f"{prefix}2026-11-29 08:59:06,798 INFO [rank0] step 1 loss 2.3234 step_time 18.6 ms"]
    for line, _ in FORMAT_LINES:
        out.append(f"{prefix}{line}")
        out.append(f"{prefix}RuntimeError: credential check failed: {line}")
    out += [f"{prefix}Traceback (most recent call last):",
            f'{prefix}  File "/opt/train/auth.py", line 12, in load_key',
            f"{prefix}ValueError: could not deserialize key data, the key file holds:",
            *(prefix + x for x in PEM),
            f"{prefix}google.auth.exceptions.DefaultCredentialsError: bad service account file:",
            *(prefix + x for x in GCP_SA),
            f"{prefix}RuntimeError: CUDA error: an illegal memory access was encountered"]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def hooks() -> Iterator[FakeSlack]:
    with FakeSlack("unused") as fake:
        yield fake


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, hooks: FakeSlack) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("secrets")
    (tmp / "roots" / "jobs").mkdir(parents=True)
    build_small_kb(tmp / "kb")
    settings = service_settings(tmp, allowed_roots=[tmp / "roots"], kb_enabled=True, kb_home=tmp / "kb",
                                kb_embedder="hashing",
                                webhooks=[{"url": f"{hooks.url}/hooks/slack", "format": "slack"}],
                                live={"debounce_s": 0.05, "settle_s": 0.4, "heartbeat_s": 5})
    settings.tokens.append(type(settings.tokens[0]).model_validate({"name": "node-agents", "token": AGENT, "scopes": ["agent"]}))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        c.tmp = tmp  # type: ignore[attr-defined]
        c.data_dir = settings.data_dir  # type: ignore[attr-defined]
        yield c


def wait_done(client: TestClient, id_: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        body = client.get(f"/v1/jobs/{id_}").json()
        return body if body["status"] in ("done", "failed") else None

    return wait_until(done, timeout=120, step=0.1)


def leaks(*folders: Path) -> list[tuple[str, str]]:
    """``(file, secret)`` for every raw secret found in the bytes of any file under ``folders``."""
    found = []
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                raw = p.read_bytes()
                found += [(str(p.relative_to(folder.parent)), s) for s in SECRETS if s.encode() in raw]
    return found


def test_the_log_carries_every_secret() -> None:
    text = console_log()
    assert all(s in text for s in SECRETS)


def test_no_secret_reaches_the_disk_by_any_path(client: TestClient, hooks: FakeSlack, tmp_path: Path) -> None:
    tmp: Path = client.tmp  # type: ignore[attr-defined]
    job = tmp_path / "job"
    (job / "node0").mkdir(parents=True)
    (job / "console_node0.log").write_text(console_log())
    # 1. upload
    r = client.post("/v1/diagnoses", files={"bundle": ("job.tar.gz", tar_gz(job))}, data={"job_id": "secret-upload"})
    assert r.status_code in (200, 202), r.text[:500]
    up = wait_done(client, r.json()["id"])
    assert up["status"] == "done", up
    did = r.json()["id"]
    # 2. a path job under the allowed root
    shutil.copytree(job, tmp / "roots" / "jobs" / "secret-path")
    r = client.post("/v1/diagnoses", json={"path": "jobs/secret-path"})
    assert r.status_code in (200, 202), r.text[:500]
    assert wait_done(client, r.json()["id"])["status"] == "done"
    # 3. a live agent's batches: the log cut mid-secret, a step note, a failure cause, a stack sample
    text = console_log()
    cut = text.index(SECRETS[0]) + 5
    base = {"agent_id": "node0:4242", "node": "node0", "sent": T0}
    lines = "\n".join(line for line, _ in FORMAT_LINES)
    for seq, body in enumerate([
        {"events": [{"event": "started", "time": T0}], "logs": [{"path": "console.log", "offset": 0, "text": text[:cut]}]},
        {"logs": [{"path": "console.log", "offset": len(text[:cut].encode()), "text": text[cut:]}],
         "steps": [{"rank": 0, "step": 1, "start": T0, "end": T0 + 1, "note": lines}],
         "stacks": [{"snapshot": 0, "time": T0, "rank": 0, "pid": 7, "fmt": "py-spy",
                     "text": 'Thread 7 (idle): "MainThread"\n    login (auth.py:3)\n' + lines + "\n"}],
         "events": [{"event": "failure", "time": T0 + 2 + i / 100, "cause": line} for i, (line, _) in enumerate(FORMAT_LINES)]},
    ]):
        r = client.post("/v1/live/jobs/secret-live/batches", json={**base, "seq": seq, **body},
                        headers={"Authorization": f"Bearer {AGENT}"})
        assert r.status_code == 200, r.text[:500]
    wait_until(lambda: (v := client.get("/v1/live/jobs/secret-live").json())["provisional"] is False and v, timeout=120)
    # 4. a slow-step stream (a lab run with a slow rank) whose records carry a secret in their string fields
    recs = [json.loads(x) for x in SLOW_FEED.read_text().splitlines()]
    for i, rec in enumerate(recs):
        line, _ = FORMAT_LINES[i % len(FORMAT_LINES)]
        rec["node"], rec["phase"] = f"{rec['node']} {line}", line
    alarms = []
    for s in sorted({rec["step"] for rec in recs}):
        batch = [x for x in recs if x["step"] == s]
        r = client.post("/v1/slow/streams/secret-stream/steps", json={"records": batch, "world_size": 2})
        assert r.status_code == 200, r.text[:500]
        alarms += r.json()["alarms"]
    assert alarms
    wait_until(lambda: any("secret-stream" in json.dumps(p) for p in hooks.posted("hooks/slack")))
    # 5. feedback with the secrets in its free text (half of the formats here, half in the KB below)
    n = len(FORMAT_LINES) // 2
    half = ["\n".join(line for line, _ in FORMAT_LINES[:n]), "\n".join(line for line, _ in FORMAT_LINES[n:])]
    r = client.post(f"/v1/diagnoses/{did}/feedback", json={
        "verdict": "correct", "category": "config", "root_cause": half[0], "action": "\n".join(PEM)})
    assert r.status_code == 200, r.text[:500]
    # 6. the knowledge base: an incident added with secrets in its action, and a search with them
    r = client.post("/v1/kb/incidents", json={"diagnosis_id": did, "category": "data", "root_cause": "\n".join(GCP_SA),
                                             "action": half[1]})
    assert r.status_code == 200, r.text[:500]
    r = client.post("/v1/kb/search", json={"text": text, "k": 3})
    assert r.status_code == 200, r.text[:500]
    # every path went through: the redacted text is there
    data_dir: Path = client.data_dir  # type: ignore[attr-defined]
    assert "<REDACTED>" in (data_dir / "live" / "secret-live" / "node0" / "console.log").read_text()
    assert list(data_dir.rglob("*.sqlite*"))
    assert leaks(data_dir, tmp / "kb") == []
    sent = json.dumps(hooks.calls)
    assert "secret-stream" in sent
    assert [s for s in SECRETS if s in sent] == []


def test_operator_text_taught_to_the_knowledge_base_outside_the_service_is_redacted(tmp_path: Path) -> None:
    """What `diag kb feedback` writes (KnowledgeBase.add_feedback, no service in front of it)."""
    from conftest import run_diagnose

    from diag_service.kb import HashingEmbedder, KBConfig, KnowledgeBase, load_records

    job = tmp_path / "job"
    job.mkdir()
    (job / "console_node0.log").write_text(console_log())
    d = run_diagnose(job)
    kb = KnowledgeBase(KBConfig(home=tmp_path / "kb"), HashingEmbedder())
    kb.build(records=load_records()[:3])
    n = len(FORMAT_LINES) // 2
    res = kb.add_feedback(d, category=d.category, title=FORMAT_LINES[-1][0][:200],
                          root_cause="\n".join(line for line, _ in FORMAT_LINES[:n]) + "\n" + "\n".join(GCP_SA),
                          action="\n".join(line for line, _ in FORMAT_LINES[n:]) + "\n" + "\n".join(PEM))
    assert res.record_id
    assert leaks(tmp_path / "kb") == []
