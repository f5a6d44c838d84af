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
from test_service_support import (
    EXAMPLE,
    HANG,
    SUBMITTER,
    FakeSlack,
    LiveServer,
    service_settings,
    tar_gz,
    wait_until,
)

from diag_service.bot import Alert, diagnosis_blocks, lark_payload, mattermost_payload, slack_payload
from diag_service.bot.blocks import clip, slack_escape
from diag_service.domain import Diagnosis

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-0000-bot-token"
READER_USER = "U05READER1"  # mapped to the read scope only
STRANGER = "U09NOBODY42"  # in the workspace, not in slack.user_scopes


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
    shutil.copytree(EXAMPLE, roots / "job-on-disk-2")
    everything = ["read", "diagnose", "kb:write"]
    settings = service_settings(
        tmp, allowed_roots=[roots], public_url="http://diag.example.test",
        slack={"signing_secret": SECRET, "bot_token": BOT_TOKEN, "api_base_url": f"{slack.url}/api/",
               "alert_channel": "C_ALERTS", "file_url_prefixes": [f"{slack.url}/files/"], "wait_s": 60,
               "user_scopes": {"U1": everything, "U2": everything, "U7": everything, READER_USER: ["read"]}},
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


def _command(srv: LiveServer, slack: FakeSlack, text: str, channel: str, user: str = "U1") -> httpx.Response:
    body = urllib.parse.urlencode({
        "command": "/diag", "text": text, "channel_id": channel, "user_id": user, "team_id": "T1",
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


# --- hostile input (issue 19, finding 7) ------------------------------------------------------------

HOSTILE_LINE = "ValueError: bad batch <!channel> ask <@U0ADMIN1> or see <http://evil.example/x|the runbook> & retry"
HOSTILE_LOG = ("[rank0]: Traceback (most recent call last):\n"
               '[rank0]:   File "/app/train.py", line 12, in <module>\n'
               "[rank0]:     check(batch)\n"
               f"[rank0]: {HOSTILE_LINE}\n")
LIVE_MARKUP = ("<!channel>", "<!here>", "<@U0ADMIN1>", "<http://evil", "<module>")


def _texts(obj: Any) -> list[str]:
    """Every ``text`` string of a Slack message or Block Kit structure."""
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == "text" and isinstance(v, str)] + [t for v in obj.values() for t in _texts(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in _texts(v)]
    return []


def test_log_text_reaches_slack_escaped_so_mentions_and_links_are_inert(
        srv: LiveServer, slack: FakeSlack, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "console.log").write_text(HOSTILE_LOG)
    assert srv.diagnose(tar_gz(job), job_id="job-hostile").status_code == 200
    _command(srv, slack, "job-hostile", "C30")
    msgs = wait_until(lambda: len(slack.posted(channel="C30")) >= 2 and slack.posted(channel="C30"))
    texts = _texts(msgs)
    assert any("&lt;!channel&gt; ask &lt;@U0ADMIN1&gt; or see &lt;http://evil.example/x|the runbook&gt; &amp; retry" in t
               for t in texts), texts
    assert not any(m in t for t in texts for m in LIVE_MARKUP)


def test_alert_payloads_and_block_text_escape_slack_control_characters() -> None:
    a = Alert(kind="hang", job_id="j-1", title="Job j-1 is hung", text="rank 3 stuck in <module> <!channel>",
              fields={"Suspects": "rank 3 @ <!here>: stuck in all_reduce", "Nodes": "<@U0ADMIN1>"},
              link="http://diag.example.test/ui/diagnoses/1")
    texts = _texts(slack_payload(a))
    assert not any(m in t for t in texts for m in LIVE_MARKUP)
    assert any("stuck in &lt;module&gt; &lt;!channel&gt;" in t for t in texts)
    assert slack_payload(a)["blocks"][-1]["elements"][0]["url"] == "http://diag.example.test/ui/diagnoses/1"
    mm = json.dumps(mattermost_payload(a.model_copy(update={"job_id": "@channel", "title": "Job @channel is hung"})))
    assert "@channel" not in mm and "@here" not in mm.replace("<!here>", "") and "@\\u200bchannel" in mm
    cut = clip(slack_escape("<" * 2000), 150)  # a cut never leaves half an entity that Slack would show
    assert len(cut) <= 150 and cut.endswith("&lt;…")


def test_slack_users_get_only_the_scopes_mapped_to_them(srv: LiveServer, slack: FakeSlack) -> None:
    from diag_service.service.settings import SlackSettings

    assert SlackSettings().scopes_of(STRANGER) == frozenset()  # the documented default: no access
    did = srv.diagnose(tar_gz(EXAMPLE), job_id="job-scoped").json()["id"]
    # a workspace member who is not mapped gets nothing, and is told privately
    ack = _command(srv, slack, "job-scoped", "C20", user=STRANGER)
    assert ack.status_code == 200 and "not allowed to read diagnoses" in ack.text and STRANGER in ack.text
    # a reader reads a stored diagnosis...
    _command(srv, slack, "job-scoped", "C21", user=READER_USER)
    msgs = wait_until(lambda: len(slack.posted(channel="C21")) >= 2 and slack.posted(channel="C21"))
    assert "job-scoped: user_code" in msgs[1]["text"]
    # ...but starts no diagnosis of logs on disk
    _command(srv, slack, "job-on-disk-2", "C22", user=READER_USER)
    resp = wait_until(lambda: slack.posted("response/C22"))
    assert "not allowed to start diagnoses" in resp[0]["text"] and resp[0]["response_type"] == "ephemeral"
    assert srv.ctx.store.latest_for_job("job-on-disk-2") is None
    # ...nor of an attached file: not downloaded, nothing said in the channel, a private refusal
    slack.files["F20"] = tar_gz(EXAMPLE)
    _event(srv, {"type": "app_mention", "user": READER_USER, "channel": "C23", "ts": "1700000500.000001",
                 "text": "<@UBOT> job-x died", "files": [{"id": "F20", "name": "job-x.tar.gz", "size": len(slack.files["F20"]),
                                                           "url_private_download": f"{slack.url}/files/F20"}]})
    eph = wait_until(lambda: slack.posted("chat.postEphemeral", channel="C23"))
    assert eph[0]["user"] == READER_USER and "not allowed to start diagnoses" in eph[0]["text"]
    assert eph[0]["thread_ts"] == "1700000500.000001"
    assert not slack.posted(channel="C23") and not slack.posted("files.download", name="F20")
    # ...and writes nothing to the knowledge base: Confirm, Correct and a submitted form are refused
    base = {"user": {"id": READER_USER}, "channel": {"id": "C24"}, "message": {"ts": "1700000600.000001"},
            "trigger_id": "T-24", "team": {"id": "T1"}, "api_app_id": "A1", "container": {"type": "message"}}
    for action in ("diag_confirm", "diag_correct"):
        _interaction(srv, {**base, "type": "block_actions",
                           "actions": [{"action_id": action, "value": did, "block_id": f"diag:{did}", "type": "button"}]})
    eph = wait_until(lambda: len(slack.posted("chat.postEphemeral", channel="C24")) >= 2
                     and slack.posted("chat.postEphemeral", channel="C24"))
    assert all("not allowed to confirm or correct diagnoses" in e["text"] for e in eph)
    assert not slack.posted(channel="C24") and not any(v.get("trigger_id") == "T-24" for v in slack.posted("views.open"))
    state = {"values": {"category": {"value": {"type": "static_select", "selected_option": {"value": "config"}}},
                        "root_cause": {"value": {"type": "plain_text_input", "value": "hidden size changed"}},
                        "action": {"value": {"type": "plain_text_input", "value": "revert the config"}},
                        "level": {"value": {"type": "static_select", "selected_option": None}}}}
    view = {"id": "V24", "type": "modal", "callback_id": "diag_correct_view", "state": state,
            "private_metadata": json.dumps({"id": did, "channel": "C24", "thread": "1700000600.000001"})}
    r = _interaction(srv, {"type": "view_submission", "user": {"id": READER_USER}, "team": {"id": "T1"},
                           "api_app_id": "A1", "view": view})
    assert r.status_code == 200 and r.json()["response_action"] == "errors" and "not allowed" in r.json()["errors"]["action"]
    assert srv.client.get(f"/v1/diagnoses/{did}").json()["feedback"] == []


def test_one_callers_alert_does_not_suppress_another_callers_alert_for_the_same_job(srv: LiveServer, slack: FakeSlack) -> None:
    data = tar_gz(HANG, arcname="dumps")

    def victim_posts() -> list[dict[str, Any]]:
        return [p for p in slack.posted(channel="C_ALERTS") if "victim-job" in p["text"]]

    # a caller with only read and diagnose reports the job first (its alert goes out, under its own key)...
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {SUBMITTER}"}, timeout=60) as other:
        r = other.post("/v1/hang", files={"dumps": ("d.tar.gz", data)}, data={"job_id": "victim-job"})
    assert r.status_code == 200 and r.json()["report"]["hung"]
    wait_until(victim_posts)
    # ...so the job's own alert is still announced, and only its own repeat is suppressed
    for _ in range(2):
        assert srv.client.post("/v1/hang", files={"dumps": ("d.tar.gz", data)}, data={"job_id": "victim-job"}).status_code == 200
    wait_until(lambda: len(victim_posts()) >= 2)
    wait_until(lambda: srv.ctx.store.alert_count("hang:admin:victim-job") == 2)
    time.sleep(0.3)
    assert len(victim_posts()) == 2
    assert srv.ctx.store.alert_count("hang:submitter:victim-job") == 1
