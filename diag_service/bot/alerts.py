"""Proactive alerts for failures, hangs and slowdowns: Slack channel posts and outgoing webhooks, de-duplicated.

One incident is one message: an alert carries a de-duplication key (``hang:<caller>:<job>``,
``slow:<caller>:<job>``: scoped to the caller that submitted the work; ``incident:<job>#<n>`` for the n-th
incident of a live job, whatever its mode), and the store lets the first one through and suppresses the rest
for ``alert_repeat_s`` (:meth:`diag_service.service.store.Store.claim_alert`, atomic across replicas).

An alert made from a diagnosis (:meth:`Alert.from_diagnosis`) carries the :class:`~diag_service.domain.Diagnosis`
itself: the Slack form is the bot's own view of it (:func:`~diag_service.bot.blocks.diagnosis_blocks`, with its
Confirm / Correct buttons), the webhook forms its root cause, category, rank, nodes and recommended action.

Formats: ``slack`` (Block Kit JSON, also accepted by Slack-compatible receivers), ``mattermost``
(incoming-webhook ``text`` + ``attachments``), ``lark`` (Lark/Feishu custom-bot ``interactive`` card).
Sending happens on a small thread pool, never on the request path; a failing receiver is retried a
few times with exponential backoff, then logged and counted; an alert no receiver took gives its
de-duplication claim back.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from diag_service.bot.blocks import clip, diagnosis_blocks, slack_escape, summary_text
from diag_service.domain import Diagnosis, FailureMode

log = logging.getLogger("diag_service.bot.alerts")

AlertKind = Literal["failure", "hang", "slow"]
_KIND_OF_MODE: dict[FailureMode, AlertKind] = {FailureMode.FAIL_HANG: "hang", FailureMode.FAIL_SLOW: "slow"}


class Alert(BaseModel):
    """What to announce. ``fields``: short label → value pairs (suspect ranks, nodes, slowdown...).

    ``caller``: who submitted the work that raised it (a token's name, ``slack:<user id>``), or None
    for the service itself. The de-duplication key is scoped to it, so one caller's alert for a job
    never claims, and so never suppresses, the key of another caller's alert for the same job id.

    ``incident``: which incident of the job this is (a live job's incident number): the key is then
    ``incident:[caller:]job#incident``, one message per incident whatever its kind. ``diagnosis`` and
    ``diagnosis_id``: the diagnosis the alert announces (:meth:`from_diagnosis`).
    """

    kind: AlertKind
    job_id: str
    title: str
    text: str
    fields: dict[str, str] = Field(default_factory=dict)
    link: str | None = None
    caller: str | None = None
    incident: str | None = None
    diagnosis: Diagnosis | None = None
    diagnosis_id: str | None = None

    @property
    def key(self) -> str:
        """``kind:job`` for the service's own alerts, ``kind:caller:job`` for a caller's; ``incident:[caller:]job#n``
        for an alert of one incident."""
        scope = self.job_id if self.caller is None else f"{self.caller}:{self.job_id}"
        return f"incident:{scope}#{self.incident}" if self.incident is not None else f"{self.kind}:{scope}"

    @classmethod
    def from_diagnosis(cls, d: Diagnosis, diagnosis_id: str, *, job_id: str, link: str | None = None,
                       incident: str | None = None, caller: str | None = None) -> Alert:
        """The alert announcing diagnosis ``d`` (stored as ``diagnosis_id``) of job ``job_id``: kind from its
        failure mode (``fail_hang`` -> hang, ``fail_slow`` -> slow, else failure), its root cause as the text,
        and as fields who acts, the confidence, the first failing rank, the faulty nodes, the watchers' findings (a
        restart storm, a repeat-offender node: ``Recurring``) and the recovery plan."""
        fields = {"Category": d.category.value, "Who acts": d.responsible.value, "Confidence": f"{d.confidence:.0%}"}
        if d.first_failing_rank is not None:
            fields["First failing rank"] = str(d.first_failing_rank) + (
                f" (node {d.first_failing_node})" if d.first_failing_node else "")
        if d.faulty_nodes:
            fields["Faulty nodes"] = ", ".join(d.faulty_nodes[:20])[:500]
        if recurring := d.recurring_findings():
            fields["Recurring"] = "; ".join(recurring)[:900]
        if d.recovery is not None:
            fields["Recommended action"] = f"{d.recovery.level.value}: {d.recovery.action}"[:900]
        return cls(kind=_KIND_OF_MODE.get(d.failure_mode, "failure"), job_id=job_id,
                   title=f"Job {job_id}: {d.category.value} ({d.failure_mode.value})", text=d.root_cause.summary[:1500],
                   fields=fields, link=link, caller=caller, incident=incident, diagnosis=d, diagnosis_id=diagnosis_id)


_EMOJI = {"failure": ":red_circle:", "hang": ":double_vertical_bar:", "slow": ":snail:"}


def slack_payload(a: Alert) -> dict[str, Any]:
    """Slack message (``chat.postMessage`` arguments without the channel, or an incoming-webhook body).
    Title, text and fields come from logs and feeds: escaped (:func:`~diag_service.bot.blocks.slack_escape`).
    An alert with its diagnosis is the bot's view of that diagnosis (:func:`~diag_service.bot.blocks.diagnosis_blocks`)."""
    e = slack_escape
    if a.diagnosis is not None and a.diagnosis_id is not None:
        return {"text": clip(summary_text(a.diagnosis), 3000), "blocks": diagnosis_blocks(a.diagnosis, a.diagnosis_id, a.link)}
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(e(a.title), 150)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": clip(f"{_EMOJI[a.kind]} {e(a.text)}", 3000)}},
    ]
    if a.fields:
        blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": clip(f"*{e(k)}*\n{e(v)}", 2000)}
                                                     for k, v in list(a.fields.items())[:10]]})
    if a.link:
        blocks.append({"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Open"},
                                                        "url": a.link, "action_id": "diag_open"}]})
    return {"text": clip(e(f"{a.title}: {a.text}"), 3000), "blocks": blocks}


def _no_at_mention(s: str) -> str:
    """Mattermost mentions are ``@name`` / ``@channel`` / ``@all`` in plain text: a zero-width space after
    each ``@`` keeps the text as shown and notifies nobody (a job id may contain ``@``)."""
    return s.replace("@", "@\u200b")


def mattermost_payload(a: Alert) -> dict[str, Any]:
    """Mattermost incoming-webhook body (Slack-style attachment with fields); ``@`` mentions made inert."""
    m = _no_at_mention
    att: dict[str, Any] = {
        "fallback": m(f"{a.title}: {a.text}"), "color": "#ff7f0e" if a.kind == "slow" else "#d62728",
        "title": m(a.title), "text": m(a.text),
        "fields": [{"short": True, "title": m(k), "value": m(v)} for k, v in a.fields.items()],
    }
    if a.link:
        att["title_link"] = a.link
    return {"username": "diag", "text": f"#### {m(a.title)}", "attachments": [att]}


def lark_payload(a: Alert) -> dict[str, Any]:
    """Lark/Feishu custom-bot body: an interactive card with the text, fields and a link button."""
    lines = [a.text] + [f"**{k}**: {v}" for k, v in a.fields.items()]
    elements: list[dict[str, Any]] = [{"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(lines)[:4000]}}]
    if a.link:
        elements.append({"tag": "action", "actions": [
            {"tag": "button", "text": {"tag": "plain_text", "content": "Open"}, "url": a.link, "type": "primary"}]})
    return {"msg_type": "interactive", "card": {
        "header": {"title": {"tag": "plain_text", "content": a.title[:100]}, "template": "orange" if a.kind == "slow" else "red"},
        "elements": elements}}


FORMATTERS = {"slack": slack_payload, "mattermost": mattermost_payload, "lark": lark_payload}


class Notifier:
    """Sends alerts to a Slack channel (through ``post_to_channel``) and to webhooks, once per incident.

    ``claim(key, kind, job_id, message) -> bool`` decides de-duplication (the store's ``claim_alert``);
    ``release(key)`` gives a claim back when no destination accepted the alert, so the incident's next
    alert is not suppressed. Each destination is tried up to ``attempts`` times with exponential backoff
    (``retry_wait_s``, doubling, capped at ``retry_max_wait_s``; tenacity), so a receiver that is down
    for a moment still gets the alert, once. ``post_to_channel(payload)`` posts to the bot's alert
    channel, or is None without a bot. ``on_outcome(kind, outcome)`` counts (``sent``,
    ``deduplicated``, ``retried``, ``failed``). ``client``: the HTTP client (tests pass a mock transport).
    """

    def __init__(self, webhooks: list[tuple[str, str]], claim: Any, post_to_channel: Any = None,
                 on_outcome: Any = None, timeout_s: float = 10.0, release: Any = None, attempts: int = 5,
                 retry_wait_s: float = 1.0, retry_max_wait_s: float = 30.0, client: httpx.Client | None = None) -> None:
        self.webhooks = webhooks
        self.claim = claim
        self.release = release or (lambda key: None)
        self.post_to_channel = post_to_channel
        self.on_outcome = on_outcome or (lambda kind, outcome: None)
        self.timeout_s = timeout_s
        self.attempts = max(1, attempts)
        self.retry_wait_s = retry_wait_s
        self.retry_max_wait_s = retry_max_wait_s
        self._client = client
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
        if not self.claim(alert.key, alert.kind, alert.job_id, alert.model_dump(mode="json", exclude={"diagnosis"})):
            self.on_outcome(alert.kind, "deduplicated")
            return None
        return self._pool.submit(self._send, alert)

    def _retrying(self, alert: Alert, what: str, send: Any) -> bool:
        """``send()`` with retries; True once it succeeded, False when every attempt failed."""
        from tenacity import RetryError, Retrying, stop_after_attempt, wait_exponential

        def before_sleep(state: Any) -> None:
            self.on_outcome(alert.kind, "retried")
            exc = state.outcome.exception() if state.outcome else None
            log.info("alert %s: %s attempt %d failed (%s); retrying", alert.key, what, state.attempt_number,
                     exc.__class__.__name__ if exc else "?")

        try:
            for attempt in Retrying(stop=stop_after_attempt(self.attempts), before_sleep=before_sleep,
                                    wait=wait_exponential(multiplier=self.retry_wait_s, max=self.retry_max_wait_s)):
                with attempt:
                    send()
        except RetryError as exc:
            last = exc.last_attempt.exception()
            log.warning("alert %s: %s failed after %d attempts: %s", alert.key, what, self.attempts,
                        last.__class__.__name__ if last else "?")
            self.on_outcome(alert.kind, "failed")
            return False
        return True

    def _post(self, url: str, payload: dict[str, Any]) -> None:
        if self._client is not None:
            r = self._client.post(url, json=payload, timeout=self.timeout_s)
        else:
            r = httpx.post(url, json=payload, timeout=self.timeout_s)
        r.raise_for_status()

    def _send(self, alert: Alert) -> int:
        ok = 0
        if self.post_to_channel is not None:
            post = self.post_to_channel
            ok += self._retrying(alert, "Slack post", lambda: post(slack_payload(alert)))
        for url, fmt in self.webhooks:
            payload = FORMATTERS[fmt](alert)
            ok += self._retrying(alert, f"{fmt} webhook", lambda url=url, payload=payload: self._post(url, payload))
        if ok:
            self.on_outcome(alert.kind, "sent")
        else:
            self.release(alert.key)  # nobody got it: the incident's next alert must not be suppressed
        return ok

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)
