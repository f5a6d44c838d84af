"""Proactive alerts for hangs and slowdowns: Slack channel posts and outgoing webhooks, de-duplicated.

One incident is one message: an alert carries a de-duplication key (``hang:<job>``, ``slow:<job>``),
and the store lets the first one through and suppresses the rest for ``alert_repeat_s``
(:meth:`diag_service.service.store.Store.claim_alert`, atomic across replicas).

Formats: ``slack`` (Block Kit JSON, also accepted by Slack-compatible receivers), ``mattermost``
(incoming-webhook ``text`` + ``attachments``), ``lark`` (Lark/Feishu custom-bot ``interactive`` card).
Sending happens on a small thread pool, never on the request path; a failing receiver is logged and
counted, never retried in a loop.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

log = logging.getLogger("diag_service.bot.alerts")

AlertKind = Literal["hang", "slow"]


class Alert(BaseModel):
    """What to announce. ``fields``: short label → value pairs (suspect ranks, nodes, slowdown...)."""

    kind: AlertKind
    job_id: str
    title: str
    text: str
    fields: dict[str, str] = Field(default_factory=dict)
    link: str | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.job_id}"


_EMOJI = {"hang": ":double_vertical_bar:", "slow": ":snail:"}


def slack_payload(a: Alert) -> dict[str, Any]:
    """Slack message (``chat.postMessage`` arguments without the channel, or an incoming-webhook body)."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": a.title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"{_EMOJI[a.kind]} {a.text}"[:3000]}},
    ]
    if a.fields:
        blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"[:2000]}
                                                     for k, v in list(a.fields.items())[:10]]})
    if a.link:
        blocks.append({"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Open"},
                                                        "url": a.link, "action_id": "diag_open"}]})
    return {"text": f"{a.title}: {a.text}"[:3000], "blocks": blocks}


def mattermost_payload(a: Alert) -> dict[str, Any]:
    """Mattermost incoming-webhook body (Slack-style attachment with fields)."""
    att: dict[str, Any] = {
        "fallback": f"{a.title}: {a.text}", "color": "#d62728" if a.kind == "hang" else "#ff7f0e",
        "title": a.title, "text": a.text,
        "fields": [{"short": True, "title": k, "value": v} for k, v in a.fields.items()],
    }
    if a.link:
        att["title_link"] = a.link
    return {"username": "diag", "text": f"#### {a.title}", "attachments": [att]}


def lark_payload(a: Alert) -> dict[str, Any]:
    """Lark/Feishu custom-bot body: an interactive card with the text, fields and a link button."""
    lines = [a.text] + [f"**{k}**: {v}" for k, v in a.fields.items()]
    elements: list[dict[str, Any]] = [{"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(lines)[:4000]}}]
    if a.link:
        elements.append({"tag": "action", "actions": [
            {"tag": "button", "text": {"tag": "plain_text", "content": "Open"}, "url": a.link, "type": "primary"}]})
    return {"msg_type": "interactive", "card": {
        "header": {"title": {"tag": "plain_text", "content": a.title[:100]}, "template": "red" if a.kind == "hang" else "orange"},
        "elements": elements}}


FORMATTERS = {"slack": slack_payload, "mattermost": mattermost_payload, "lark": lark_payload}


class Notifier:
    """Sends alerts to a Slack channel (through ``post_to_channel``) and to webhooks, once per incident.

    ``claim(key, kind, job_id, message) -> bool`` decides de-duplication (the store's ``claim_alert``).
    ``post_to_channel(payload)`` posts to the bot's alert channel, or is None without a bot.
    ``on_outcome(kind, outcome)`` counts (``sent``, ``deduplicated``, ``failed``).
    """

    def __init__(self, webhooks: list[tuple[str, str]], claim: Any, post_to_channel: Any = None,
                 on_outcome: Any = None, timeout_s: float = 10.0) -> None:
        self.webhooks = webhooks
        self.claim = claim
        self.post_to_channel = post_to_channel
        self.on_outcome = on_outcome or (lambda kind, outcome: None)
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="diag-alerts")

    @property
    def enabled(self) -> bool:
        return bool(self.webhooks) or self.post_to_channel is not None

    def notify(self, alert: Alert) -> Future[int] | None:
        """Send ``alert`` unless an alert of the same incident was sent recently. Returns the sending
        future (its result: the number of destinations that accepted it), or None when suppressed or
        when nothing is configured."""
        if not self.enabled:
            return None
        if not self.claim(alert.key, alert.kind, alert.job_id, alert.model_dump()):
            self.on_outcome(alert.kind, "deduplicated")
            return None
        return self._pool.submit(self._send, alert)

    def _send(self, alert: Alert) -> int:
        ok = 0
        if self.post_to_channel is not None:
            try:
                self.post_to_channel(slack_payload(alert))
                ok += 1
            except Exception as exc:  # noqa: BLE001 - a chat outage must not break the service
                log.warning("alert %s: Slack post failed: %s", alert.key, exc.__class__.__name__)
                self.on_outcome(alert.kind, "failed")
        for url, fmt in self.webhooks:
            try:
                r = httpx.post(url, json=FORMATTERS[fmt](alert), timeout=self.timeout_s)
                r.raise_for_status()
                ok += 1
            except httpx.HTTPError as exc:
                log.warning("alert %s: %s webhook failed: %s", alert.key, fmt, exc.__class__.__name__)
                self.on_outcome(alert.kind, "failed")
        if ok:
            self.on_outcome(alert.kind, "sent")
        return ok

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)
