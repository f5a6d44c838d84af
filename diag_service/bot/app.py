"""The Slack app (slack_bolt), mounted on the service's FastAPI app at ``POST /slack/events``.

- ``/diag JOB_ID``: the job's latest stored diagnosis, or a new one when its logs are found under an
  allowed root (``<root>/<JOB_ID>``); posted as a short message with the details in its thread.
- Mention with a log file attached (or with a job id): the file is downloaded from Slack, inspected
  with the service's upload limits, diagnosed, and answered in the thread.
- Confirm / Correct buttons: feedback on the diagnosis (stored, and taught to the knowledge base);
  Correct opens a form (category, root cause, what fixed it, recovery level).
- Proactive posts: hang and slowdown alerts go to ``slack.alert_channel`` (see :mod:`diag_service.bot.alerts`).

Who may do what: each Slack user id maps to the service's scopes in ``slack.user_scopes`` (``read``: look
up diagnoses; ``diagnose``: diagnose attached or on-disk logs; ``kb:write``: Confirm / Correct); a user
not mapped gets ``slack.default_scopes``, none by default, and is told so privately. Every text from
logs, files or people is escaped (:func:`~diag_service.bot.blocks.slack_escape`) before it is posted.

Request signatures are verified by Bolt (``X-Slack-Signature``, ``X-Slack-Request-Timestamp``;
unsigned or stale requests get 401). Listeners acknowledge at once and work in Bolt's thread pool.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from slack_bolt import App
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from diag_service.bot.blocks import (
    CONFIRM,
    CORRECT,
    CORRECT_VIEW,
    clip,
    correct_view,
    diagnosis_blocks,
    slack_escape,
    summary_text,
)
from diag_service.domain import Category, Diagnosis, RecoveryLevel, is_job_id
from diag_service.errors import DiagError, ErrorKind
from diag_service.service.context import Conflict, NotFound, ServiceContext
from diag_service.service.store import JobRecord, new_id
from diag_service.service.uploads import (
    Refused,
    inspect_bundle,
    job_id_from_name,
    resolve_allowed,
    safe_filename,
    with_extension,
)

log = logging.getLogger("diag_service.bot")

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")


class BotError(DiagError):
    """Something to tell the user in the thread (bad job id, no logs, file refused...)."""

    kind = ErrorKind.INPUT


class NotAllowed(BotError):
    """The Slack user lacks the scope the request needs (``slack.user_scopes``); told privately."""

    kind = ErrorKind.REFUSED


_SLACK_USER = re.compile(r"[UW][A-Z0-9]{1,31}")
_WHAT = {"read": "read diagnoses", "diagnose": "start diagnoses", "kb:write": "confirm or correct diagnoses"}


def require(ctx: ServiceContext, user: str, scope: str) -> None:
    """Raise :class:`NotAllowed` unless the Slack ``user`` has ``scope`` (``slack.user_scopes``, else
    ``slack.default_scopes``, which is empty by default: an unmapped user can do nothing)."""
    if scope not in ctx.settings.slack.scopes_of(user):
        who = user if _SLACK_USER.fullmatch(user) else "(unknown)"
        raise NotAllowed(f"You are not allowed to {_WHAT.get(scope, scope)} with this bot: Slack user {who} does not "
                         f"have the '{scope}' scope. Ask the service's operator to add it to slack.user_scopes.")


def mention(user: str) -> str:
    """``<@U…>`` for a well-formed Slack user id, else a plain "someone" (never raw text in a mention)."""
    return f"<@{user}>" if _SLACK_USER.fullmatch(user) else "someone"


def _find_logs(ctx: ServiceContext, job_id: str) -> Path | None:
    for root in ctx.settings.allowed_roots:
        cand = root / job_id
        if cand.exists():
            try:
                return resolve_allowed(str(cand), ctx.settings.allowed_roots)
            except Refused:
                return None
    return None


def lookup_or_diagnose(ctx: ServiceContext, job_id: str, user: str) -> JobRecord:
    """The latest diagnosis of ``job_id``, or a new one of its logs under an allowed root (waited for).
    The Slack ``user`` needs the ``read`` scope, and ``diagnose`` when a new diagnosis is needed;
    raises :class:`NotAllowed` otherwise, :class:`BotError` for a bad id or no logs."""
    require(ctx, user, "read")
    if not is_job_id(job_id):
        raise BotError(f"`{job_id[:80]}` is not a job id (letters, digits and ._:@/-)")
    job = ctx.store.latest_for_job(job_id)
    if job is None:
        path = _find_logs(ctx, job_id)
        if path is None:
            raise BotError(f"No diagnosis and no logs found for `{job_id}`. Upload the logs with `POST /v1/diagnoses`, "
                           "or mention me with the log bundle attached.")
        require(ctx, user, "diagnose")
        try:
            job, _ = ctx.submit("diagnose", ctx.diagnose_task(path, job_id), job_id=job_id, caller=f"slack:{user}")
        except Refused as exc:
            raise BotError(exc.message) from None
    if job.status in ("queued", "running"):
        job = ctx.wait_blocking(job, ctx.settings.slack.wait_s)
    return job


def download_and_diagnose(ctx: ServiceContext, file: dict[str, Any], job_id: str | None, user: str) -> JobRecord:
    """Download a Slack file (bot token, size-capped), inspect it like an upload, diagnose it and wait.
    The Slack ``user`` needs the ``diagnose`` scope (:class:`NotAllowed` before anything is downloaded)."""
    require(ctx, user, "diagnose")
    s = ctx.settings.slack
    url = file.get("url_private_download") or file.get("url_private") or ""
    if not any(url.startswith(p) for p in s.file_url_prefixes):
        raise BotError("I can only download files shared in Slack.")
    size = int(file.get("size") or 0)
    limit = min(s.max_file_bytes, ctx.settings.limits.max_upload_bytes)
    if size > limit:
        raise BotError(f"The file is {size} bytes; the limit is {limit}.")
    job_uuid = new_id()
    folder = ctx.settings.uploads_dir / job_uuid
    dest = folder / safe_filename(file.get("name"), "bundle")
    folder.mkdir(parents=True, exist_ok=True)
    token = s.bot_token.get_secret_value() if s.bot_token else ""
    try:
        n = 0
        with httpx.stream("GET", url, headers={"Authorization": f"Bearer {token}"}, timeout=60, follow_redirects=False) as r:
            if r.status_code != 200:
                raise BotError(f"Slack refused the file download (HTTP {r.status_code}).")
            with open(dest, "wb") as fh:
                for chunk in r.iter_bytes(1 << 20):
                    n += len(chunk)
                    if n > limit:
                        raise BotError(f"The file is larger than the limit of {limit} bytes.")
                    fh.write(chunk)
        info = inspect_bundle(dest, ctx.settings.limits)
        final = dest.with_name(with_extension(dest.name, info.kind))
        dest.rename(final)
        name = job_id or job_id_from_name(file.get("name") or "")
        job, _ = ctx.submit("diagnose", ctx.diagnose_task(final, name), job_id=name, job_uuid=job_uuid,
                            input_path=folder, input_bytes=n, caller=f"slack:{user}")
    except Refused as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BotError(f"I cannot take this file: {exc.message}") from None
    except httpx.HTTPError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BotError(f"Downloading the file failed ({exc.__class__.__name__}).") from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return ctx.wait_blocking(job, s.wait_s)


def result_message(ctx: ServiceContext, job: JobRecord) -> tuple[str, list[dict[str, Any]]]:
    """Fallback text and blocks for a finished (or failed, or still running) diagnosis job, escaped for Slack."""
    if job.status == "failed":
        return slack_escape(f"The diagnosis of {job.job_id or job.id} failed: {job.error}"), []
    if job.status != "done" or not job.result:
        link = ctx.link(job.id)
        return slack_escape(f"Still diagnosing {job.job_id or job.id}; " + (f"see {link}" if link else f"id {job.id}")), []
    d = Diagnosis.model_validate_json(job.result)
    return summary_text(d), diagnosis_blocks(d, job.id, ctx.link(job.id))


def create_bolt_app(ctx: ServiceContext) -> App:
    """The Bolt app with its listeners; its Web API client talks to ``slack.api_base_url``."""
    s = ctx.settings.slack
    assert s.signing_secret is not None and s.bot_token is not None
    client = WebClient(token=s.bot_token.get_secret_value(), base_url=s.api_base_url, timeout=15)
    bolt = App(client=client, signing_secret=s.signing_secret.get_secret_value(), token_verification_enabled=False,
               process_before_response=False)

    def post_result(channel: str, job: JobRecord, thread_ts: str | None) -> None:
        text, blocks = result_message(ctx, job)
        if thread_ts is None:  # a slash command: a short message in the channel, the details in its thread
            head = client.chat_postMessage(channel=channel, text=clip(f":mag: {text}", 3000))
            thread_ts = head["ts"]
        client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=clip(text, 3000), blocks=blocks or None)

    def say_in_thread(channel: str, thread_ts: str | None, text: str, escaped: bool = False) -> None:
        """Post ``text`` in the thread; escaped for Slack unless the caller composed it so (``escaped``)."""
        client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=clip(text if escaped else slack_escape(text), 3000))

    def tell_privately(channel: str, user: str, thread_ts: str | None, text: str) -> None:
        """An ephemeral message only ``user`` sees (refusals are not posted for the channel to read)."""
        client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=clip(slack_escape(text), 3000))

    @bolt.command("/diag")
    def on_diag(ack: Any, command: dict[str, Any], respond: Any) -> None:
        job_id = (command.get("text") or "").strip().split(" ")[0]
        if not job_id:
            ack("Usage: `/diag JOB_ID`: the diagnosis of a failed job (or mention me with its logs attached).")
            return
        user = command.get("user_id") or ""
        try:
            require(ctx, user, "read")
        except NotAllowed as exc:
            ack(slack_escape(str(exc)))
            return
        ack(slack_escape(f"Looking up `{job_id[:80]}`…"))
        channel = command.get("channel_id", "")
        try:
            job = lookup_or_diagnose(ctx, job_id, user)
            post_result(channel, job, None)
        except BotError as exc:
            respond(text=slack_escape(str(exc)), response_type="ephemeral")
        except SlackApiError as exc:  # e.g. not in the channel: answer the user privately instead
            log.warning("/diag: chat.postMessage failed: %s", exc.response.get("error"))
            text, blocks = result_message(ctx, job)
            respond(text=text, blocks=blocks or None, response_type="ephemeral")

    @bolt.event("app_mention")
    def on_mention(event: dict[str, Any]) -> None:
        channel = event.get("channel", "")
        thread_ts = event.get("thread_ts") or event.get("ts")
        words = _MENTION.sub(" ", event.get("text") or "").split()
        job_id = next((w for w in words if is_job_id(w) and w.lower() != "diag"), None)
        files = event.get("files") or []
        user = event.get("user") or ""
        try:
            if files:
                require(ctx, user, "diagnose")  # before the file is looked at or anything is said in the channel
                f = files[0]
                if not (f.get("url_private_download") or f.get("url_private")) and f.get("id"):
                    f = client.files_info(file=f["id"])["file"]
                say_in_thread(channel, thread_ts, f"Diagnosing `{safe_filename(f.get('name'), 'the file')}`…")
                job = download_and_diagnose(ctx, f, job_id, user)
            elif job_id:
                job = lookup_or_diagnose(ctx, job_id, user)
            else:
                say_in_thread(channel, thread_ts, "Attach a job's log bundle (.tar.gz, .zip or a log file) or give its job id.")
                return
            post_result(channel, job, thread_ts)
        except NotAllowed as exc:
            tell_privately(channel, user, thread_ts, str(exc))
        except BotError as exc:
            say_in_thread(channel, thread_ts, str(exc))

    def _where(body: dict[str, Any]) -> tuple[str, str | None, str]:
        msg = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id", "")
        return channel, msg.get("thread_ts") or msg.get("ts"), (body.get("user") or {}).get("id", "")

    @bolt.action(CONFIRM)
    def on_confirm(ack: Any, body: dict[str, Any]) -> None:
        ack()
        diag_id = body["actions"][0]["value"]
        channel, thread_ts, user = _where(body)
        try:
            require(ctx, user, "kb:write")
            out = ctx.feedback(diag_id, verdict="confirm", who=f"slack:{user}", source="slack")
        except NotAllowed as exc:
            tell_privately(channel, user, thread_ts, str(exc))
            return
        except (NotFound, Conflict) as exc:
            say_in_thread(channel, thread_ts, str(exc))
            return
        kb = f" Knowledge base: `{out.kb_record_id}`{' (merged)' if out.kb_merged else ''}." if out.kb_record_id else ""
        say_in_thread(channel, thread_ts, f":white_check_mark: {mention(user)} "
                      + slack_escape(f"confirmed this diagnosis ({out.feedback.category}).{kb}"), escaped=True)

    @bolt.action(CORRECT)
    def on_correct(ack: Any, body: dict[str, Any]) -> None:
        ack()
        diag_id = body["actions"][0]["value"]
        channel, thread_ts, user = _where(body)
        try:
            require(ctx, user, "kb:write")
            _job, d = ctx.diagnosis(diag_id)
        except NotAllowed as exc:
            tell_privately(channel, user, thread_ts, str(exc))
            return
        except NotFound as exc:
            say_in_thread(channel, thread_ts, str(exc))
            return
        if d is None:
            say_in_thread(channel, thread_ts, "This diagnosis is not finished yet.")
            return
        meta = json.dumps({"id": diag_id, "channel": channel, "thread": thread_ts})
        client.views_open(trigger_id=body["trigger_id"], view=correct_view(d, meta))

    @bolt.view(CORRECT_VIEW)
    def on_correct_submit(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = view.get("state", {}).get("values", {})
        user = (body.get("user") or {}).get("id", "")
        try:
            require(ctx, user, "kb:write")  # checked again: the form may outlive a change of the mapping
        except NotAllowed as exc:
            ack(response_action="errors", errors={"action": str(exc)[:150]})
            return

        def val(block: str) -> str | None:
            v = (values.get(block) or {}).get("value") or {}
            return (v.get("selected_option") or {}).get("value") if "selected_option" in v else v.get("value")

        action = (val("action") or "").strip()
        if not action:
            ack(response_action="errors", errors={"action": "Say what fixed it (or what should be done)."})
            return
        try:
            category = Category(val("category") or "")
            level = RecoveryLevel(val("level")) if val("level") else None
        except ValueError:
            ack(response_action="errors", errors={"category": "Pick a category from the list."})
            return
        ack()
        meta = json.loads(view.get("private_metadata") or "{}")
        try:
            out = ctx.feedback(meta.get("id", ""), verdict="correct", category=category, root_cause=val("root_cause"),
                               action=action, level=level, who=f"slack:{user}", source="slack")
        except (NotFound, Conflict) as exc:
            say_in_thread(meta.get("channel", ""), meta.get("thread"), str(exc))
            return
        kb = f" Knowledge base: `{out.kb_record_id}`." if out.kb_record_id else ""
        say_in_thread(meta.get("channel", ""), meta.get("thread"),
                      f":pencil2: {mention(user)} corrected this diagnosis to *{category.value}*: "
                      + slack_escape(f"{action[:500]}{kb}"), escaped=True)

    @bolt.action("diag_open")
    def on_open(ack: Any) -> None:
        ack()

    @bolt.event("message")
    def on_message() -> None:  # channel chatter the app is subscribed to: nothing to do
        return

    return bolt


def mount(app: FastAPI, ctx: ServiceContext) -> App:
    """Add ``POST /slack/events`` (commands, events and interactivity) and the alert channel poster."""
    bolt = create_bolt_app(ctx)
    if not ctx.settings.slack.user_scopes and not ctx.settings.slack.default_scopes:
        log.warning("slack.user_scopes is empty and slack.default_scopes is none: the bot refuses every Slack user")
    channel = ctx.settings.slack.alert_channel
    if channel:
        ctx.notifier.post_to_channel = lambda payload: bolt.client.chat_postMessage(channel=channel, **payload)

    @app.post("/slack/events", include_in_schema=False)
    async def slack_events(request: Request) -> Response:
        body = await request.body()
        resp = await run_in_threadpool(bolt.dispatch, to_bolt_request(request, body))
        return to_starlette_response(resp)

    app.state.bolt = bolt
    return bolt
