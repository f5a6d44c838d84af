"""The Slack bot against a fake Slack Web API on 127.0.0.1: signed requests (valid, unsigned, stale,
forged), ``/diag JOB_ID``, mentions with an attached log, Confirm / Correct, and proactive alerts."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier
from test_service_support import EXAMPLE, HANG, FakeSlack, LiveServer, service_settings, tar_gz, wait_until

from diag_service.bot import Alert, diagnosis_blocks, lark_payload, mattermost_payload, slack_payload
from diag_service.domain import Diagnosis

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-0000-bot-token"


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(BOT_TOKEN) as fake:
        yield fake


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, slack: FakeSlack) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("bot")
    roots = tmp / "roots"
    roots.mkdir()
    shutil.copytree(EXAMPLE, roots / "job-on-disk")
    settings = service_settings(
        tmp, allowed_roots=[roots], public_url="http://diag.example.test",
        slack={"signing_secret": SECRET, "bot_token": BOT_TOKEN, "api_base_url": f"{slack.url}/api/",
               "alert_channel": "C_ALERTS", "file_url_prefixes": [f"{slack.url}/files/"], "wait_s": 60},
    )
    with LiveServer(settings) as s:
        yield s


def _signed(body: str, ts: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    sig = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": sig,
            "Content-Type": "application/x-www-form-urlencoded"}


def _post(srv: LiveServer, body: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{srv.url}/slack/events", content=body.encode(), headers=headers, timeout=30)


def _command(srv: LiveServer, slack: FakeSlack, text: str, channel: str) -> httpx.Response:
    body = urllib.parse.urlencode({
        "command": "/diag", "text": text, "channel_id": channel, "user_id": "U1", "team_id": "T1",
        "trigger_id": "trig", "response_url": f"{slack.url}/response/{channel}", "token": "x"})
    return _post(srv, body, _signed(body))


def _interaction(srv: LiveServer, payload: dict[str, Any]) -> httpx.Response:
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    return _post(srv, body, _signed(body))


def _event(srv: LiveServer, event: dict[str, Any]) -> httpx.Response:
    body = json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": f"Ev{time.time_ns()}",
                       "event_time": int(time.time()), "event": event})
    headers = _signed(body)
    headers["Content-Type"] = "application/json"
    return _post(srv, body, headers)


def test_signatures_valid_unsigned_stale_forged(srv: LiveServer, slack: FakeSlack) -> None:
    body = urllib.parse.urlencode({"command": "/diag", "text": "", "channel_id": "C0", "user_id": "U1",
                                   "response_url": f"{slack.url}/response/C0", "team_id": "T1"})
    ok = _post(srv, body, _signed(body))
    assert ok.status_code == 200 and "Usage" in ok.text
    assert _post(srv, body, {"Content-Type": "application/x-www-form-urlencoded"}).status_code == 401
    assert _post(srv, body, _signed(body, ts=int(time.time()) - 600)).status_code == 401
    assert _post(srv, body, _signed(body, secret="not-the-secret")).status_code == 401
    tampered = _signed(body)
    assert _post(srv, body.replace("C0", "C9"), tampered).status_code == 401
    # the refusals did not reach any listener
    assert not slack.posted(channel="C9")
    assert srv.client.get("/healthz").status_code == 200


def test_slash_command_posts_stored_diagnosis_in_thread(srv: LiveServer, slack: FakeSlack) -> None:
    r = srv.diagnose(tar_gz(EXAMPLE), job_id="job-42")
    assert r.status_code == 200
    ack = _command(srv, slack, "job-42", "C1")
    assert ack.status_code == 200 and "Looking up" in ack.text
    msgs = wait_until(lambda: len(slack.posted(channel="C1")) >= 2 and slack.posted(channel="C1"))
    head, detail = msgs[0], msgs[1]
    assert "user_code" in head["text"] and "thread_ts" not in head
    assert detail["thread_ts"] and detail["thread_ts"].startswith("1700000000.")
    blocks = detail["blocks"]
    text = json.dumps(blocks)
    assert blocks[0]["type"] == "header" and "job-42: user_code (fail_stop)" in blocks[0]["text"]["text"]
    assert "shapes cannot be multiplied" in text and "Recommended action" in text and "L4" in text
    actions = blocks[-1]["elements"]
    assert [a.get("action_id") for a in actions] == ["diag_confirm", "diag_correct", "diag_open"]
    assert actions[0]["value"] == r.json()["id"]
    assert actions[2]["url"] == f"http://diag.example.test/ui/diagnoses/{r.json()['id']}"


def test_slash_command_diagnoses_logs_found_under_the_root(srv: LiveServer, slack: FakeSlack) -> None:
    _command(srv, slack, "job-on-disk", "C2")
    msgs = wait_until(lambda: len(slack.posted(channel="C2")) >= 2 and slack.posted(channel="C2"))
    assert "job-on-disk: user_code" in msgs[1]["text"]
    assert srv.ctx.store.latest_for_job("job-on-disk").status == "done"


def test_slash_command_unknown_job_answers_privately(srv: LiveServer, slack: FakeSlack) -> None:
    _command(srv, slack, "no-such-job", "C3")
    resp = wait_until(lambda: slack.posted("response/C3"))
    assert "No diagnosis and no logs found for `no-such-job`" in resp[0]["text"]
    assert resp[0]["response_type"] == "ephemeral"
    _command(srv, slack, "../../etc/passwd", "C3")
    wait_until(lambda: len(slack.posted("response/C3")) >= 2)
    assert "is not a job id" in slack.posted("response/C3")[1]["text"]


def test_mention_with_attached_log_is_diagnosed_in_thread(srv: LiveServer, slack: FakeSlack) -> None:
    slack.files["F1"] = tar_gz(EXAMPLE)
    _event(srv, {"type": "app_mention", "user": "U2", "channel": "C4", "ts": "1700000100.000001",
                 "text": "<@UBOT> job-99 died, what happened?",
                 "files": [{"id": "F1", "name": "job-99-logs.tar.gz", "size": len(slack.files["F1"]),
                            "url_private_download": f"{slack.url}/files/F1"}]})
    msgs = wait_until(lambda: len(slack.posted(channel="C4")) >= 2 and slack.posted(channel="C4"))
    assert all(m["thread_ts"] == "1700000100.000001" for m in msgs)
    assert "Diagnosing" in msgs[0]["text"]
    assert msgs[1]["blocks"][0]["text"]["text"].startswith("job-99: user_code")
    assert slack.posted("files.download", name="F1"), "downloaded with the bot token"


def test_mention_with_hostile_or_foreign_file_is_refused(srv: LiveServer, slack: FakeSlack) -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("../../evil.log", "x")
    slack.files["F2"] = buf.getvalue()
    _event(srv, {"type": "app_mention", "user": "U2", "channel": "C5", "ts": "1700000200.000001", "text": "<@UBOT>",
                 "files": [{"id": "F2", "name": "evil.zip", "size": 100, "url_private_download": f"{slack.url}/files/F2"}]})
    msgs = wait_until(lambda: len(slack.posted(channel="C5")) >= 2 and slack.posted(channel="C5"))
    assert "I cannot take this file" in msgs[1]["text"] and "unsafe member path" in msgs[1]["text"]
    _event(srv, {"type": "app_mention", "user": "U2", "channel": "C6", "ts": "1700000300.000001", "text": "<@UBOT>",
                 "files": [{"id": "F3", "name": "x.log", "size": 10, "url_private_download": "http://169.254.169.254/x"}]})
    msgs = wait_until(lambda: len(slack.posted(channel="C6")) >= 2 and slack.posted(channel="C6"))
    assert "only download files shared in Slack" in msgs[1]["text"]
    assert srv.client.get("/healthz").status_code == 200


def test_confirm_and_correct_buttons_record_feedback(srv: LiveServer, slack: FakeSlack) -> None:
    did = srv.diagnose(tar_gz(EXAMPLE), job_id="job-fb").json()["id"]
    base = {"user": {"id": "U7"}, "channel": {"id": "C7"}, "message": {"ts": "1700000400.000001"}, "trigger_id": "T-7",
            "team": {"id": "T1"}, "api_app_id": "A1", "container": {"type": "message"}}
    r = _interaction(srv, {**base, "type": "block_actions", "actions": [{"action_id": "diag_confirm", "value": did,
                                                                         "block_id": f"diag:{did}", "type": "button"}]})
    assert r.status_code == 200
    confirmed = wait_until(lambda: slack.posted(channel="C7"))
    assert "<@U7> confirmed this diagnosis (user_code)" in confirmed[0]["text"]
    assert confirmed[0]["thread_ts"] == "1700000400.000001"
    # Correct: a form opens; submitting it records the correction
    _interaction(srv, {**base, "type": "block_actions", "actions": [{"action_id": "diag_correct", "value": did,
                                                                     "block_id": f"diag:{did}", "type": "button"}]})
    view = wait_until(lambda: slack.posted("views.open"))[0]["view"]
    assert view["callback_id"] == "diag_correct_view" and json.loads(view["private_metadata"])["id"] == did
    state = {"values": {"category": {"value": {"type": "static_select", "selected_option": {"value": "config"}}},
                        "root_cause": {"value": {"type": "plain_text_input", "value": "hidden size changed in config"}},
                        "action": {"value": {"type": "plain_text_input", "value": ""}},
                        "level": {"value": {"type": "static_select", "selected_option": None}}}}
    sub = {"type": "view_submission", "user": {"id": "U7"}, "team": {"id": "T1"}, "api_app_id": "A1",
           "view": {**view, "id": "V1", "state": state}}
    r = _interaction(srv, sub)
    assert r.status_code == 200 and r.json()["response_action"] == "errors" and "action" in r.json()["errors"]
    state["values"]["action"]["value"]["value"] = "revert the config change"
    assert _interaction(srv, sub).status_code == 200
    corrected = wait_until(lambda: len(slack.posted(channel="C7")) >= 2 and slack.posted(channel="C7"))
    assert "corrected this diagnosis to *config*" in corrected[1]["text"]
    fb = srv.client.get(f"/v1/diagnoses/{did}").json()["feedback"]
    assert [(f["verdict"], f["category"], f["source"], f["who"]) for f in fb] == [
        ("confirmed", "user_code", "slack", "slack:U7"), ("corrected", "config", "slack", "slack:U7")]


def test_hang_alert_is_posted_once_to_the_alert_channel(srv: LiveServer, slack: FakeSlack) -> None:
    data = tar_gz(HANG, arcname="dumps")
    for _ in range(2):
        r = srv.client.post("/v1/hang", files={"dumps": ("d.tar.gz", data)}, data={"job_id": "hung-bot"})
        assert r.status_code == 200 and r.json()["report"]["hung"]
    posts = wait_until(lambda: slack.posted(channel="C_ALERTS"))
    time.sleep(0.3)
    posts = [p for p in slack.posted(channel="C_ALERTS") if "hung-bot" in p["text"]]
    assert len(posts) == 1
    assert posts[0]["blocks"][0]["text"]["text"] == "Job hung-bot is hung" and "Suspects" in json.dumps(posts[0]["blocks"])


def test_payload_formats_and_block_limits() -> None:
    a = Alert(kind="slow", job_id="j", title="Job j is running slow", text="1.5x slower since step 69",
              fields={"Rank": "0", "Node": "node0"}, link="http://x/ui/diagnoses/1")
    s = slack_payload(a)
    assert s["blocks"][-1]["elements"][0]["url"] == "http://x/ui/diagnoses/1" and "running slow" in s["text"]
    m = mattermost_payload(a)
    assert m["attachments"][0]["title_link"] == "http://x/ui/diagnoses/1" and len(m["attachments"][0]["fields"]) == 2
    lk = lark_payload(a)
    assert lk["card"]["header"]["template"] == "orange" and "**Rank**: 0" in lk["card"]["elements"][0]["text"]["content"]
    from diag_service.pipeline import DiagnoseRequest, diagnose

    d: Diagnosis = diagnose(DiagnoseRequest(path=str(EXAMPLE), recovery=True))
    d = d.model_copy(update={"root_cause": d.root_cause.model_copy(update={"summary": "x" * 10_000})})
    for b in diagnosis_blocks(d, "id1"):
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= 3000
        if b["type"] == "header":
            assert len(b["text"]["text"]) <= 150


def test_bot_is_not_mounted_without_slack_settings(tmp_path: Path) -> None:
    with LiveServer(service_settings(tmp_path)) as s:
        assert httpx.post(f"{s.url}/slack/events", content=b"x").status_code == 404
