"""Block Kit views of the shared models: a diagnosis with Confirm / Correct buttons, and the correction form.

Pure functions from :mod:`diag_service.domain` models to Slack JSON; no Slack client here.
Limits respected: section text ≤ 3,000 characters, at most 10 fields, header ≤ 150. Every text that
comes from logs, the knowledge base or a person goes through :func:`slack_escape` first.
"""

from __future__ import annotations

import re
from typing import Any

from diag_service.domain import Category, Diagnosis, RecoveryLevel

CONFIRM = "diag_confirm"
CORRECT = "diag_correct"
CORRECT_VIEW = "diag_correct_view"

_MODE_EMOJI = {"fail_stop": ":red_circle:", "fail_hang": ":double_vertical_bar:", "fail_slow": ":snail:"}


_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


def slack_escape(s: str) -> str:
    """``s`` for a Slack text object or message ``text``: ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``,
    ``&gt;`` (Slack's "Escaping text" rule: the three control characters of its formatting), so a
    mention (``<!channel>``, ``<@U123>``) or a disguised link (``<http://x|click>``) from log text
    shows as typed and notifies or links nobody. Nothing else changes."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(s: str, n: int) -> str:
    """At most ``n`` characters; a cut never leaves half an entity of :func:`slack_escape` behind."""
    return s if len(s) <= n else _PARTIAL_ENTITY.sub("", s[: n - 1]) + "…"


def _e(s: object) -> str:
    return slack_escape(str(s))


def summary_text(d: Diagnosis) -> str:
    """One line for notifications (escaped for Slack): job, category, failure mode and the start of the root cause."""
    return clip(_e(f"{d.job_id}: {d.category.value} ({d.failure_mode.value}) — {d.root_cause.summary}"), 300)


def evidence_lines(d: Diagnosis, n: int = 3) -> list[str]:
    """The first ``n`` evidence lines as ``[rank R @ node, time] file:line`` + text (escaped for Slack)."""
    out = []
    for e in d.root_cause.evidence[:n]:
        where = ", ".join(x for x in (f"rank {e.rank}" if e.rank is not None else "", e.node or "", e.timestamp or "") if x)
        out.append(_e(f"[{where or 'unknown rank'}] {e.file}:{e.line}\n") + clip(_e(e.text), 400))
    return out


def diagnosis_blocks(d: Diagnosis, diagnosis_id: str, link: str | None = None, buttons: bool = True) -> list[dict[str, Any]]:
    """The diagnosis for a thread: category, root cause, evidence, similar incidents, recurring findings (a
    restart storm, a repeat-offender node), action, buttons."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text",
                                    "text": clip(_e(f"{d.job_id}: {d.category.value} ({d.failure_mode.value})"), 150)}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": clip(f"{_MODE_EMOJI.get(d.failure_mode.value, '')} *Root cause*\n"
                                                   f"{_e(d.root_cause.summary)}", 3000)}},
    ]
    fields = [f"*Category*\n{d.category.value}", f"*Who acts*\n{d.responsible.value}",
              f"*Confidence*\n{d.confidence:.0%}"]
    if d.first_failing_rank is not None:
        fields.append(f"*First failing rank*\n{d.first_failing_rank}")
    if d.faulty_nodes:
        fields.append(f"*Faulty nodes*\n{clip(_e(', '.join(d.faulty_nodes)), 200)}")
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields[:10]]})
    if d.narrative is not None and d.narrative.text:
        who = f"model {d.narrative.model}" if d.narrative.source == "model" else "deterministic summary"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": clip(f"*Summary*\n{_e(d.narrative.text)}", 3000)}})
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": clip(f"written by {_e(who)}", 150)}]})
    ev = evidence_lines(d)
    if ev:
        body = "\n\n".join(ev).replace("```", "'''")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": clip(f"*Evidence*\n```{body}```", 3000)}})
    if d.similar_incidents:
        lines = [f"• {clip(_e(s.title), 120)} ({s.score:.2f}) — {clip(_e(s.action), 200)}" for s in d.similar_incidents[:3]]
        title = "*Closest past incidents* (none similar enough: this looks new)" if d.novel else "*Similar incidents*"
        text = clip(title + "\n" + "\n".join(lines), 3000)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    elif d.novel:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "No similar past incident: this looks new."}]})
    if recurring := d.recurring_findings():  # a restart storm, a repeat-offender node: why the plan escalates
        text = clip("*Recurring*\n" + "\n".join(f"• {_e(f)}" for f in recurring), 3000)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    if d.recovery is not None:
        r = d.recovery
        text = f"*Recommended action* ({r.level.value})\n{_e(r.action)}"
        if r.fix_hint:
            text += f"\n_Fix hint:_ {_e(r.fix_hint)}"
        if r.target_nodes:
            text += f"\n_Nodes:_ {_e(', '.join(r.target_nodes[:20]))}"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": clip(text, 3000)}})
    elements: list[dict[str, Any]] = []
    if buttons:
        elements += [
            {"type": "button", "action_id": CONFIRM, "value": diagnosis_id, "style": "primary",
             "text": {"type": "plain_text", "text": "Confirm"}},
            {"type": "button", "action_id": CORRECT, "value": diagnosis_id, "text": {"type": "plain_text", "text": "Correct"}},
        ]
    if link:
        elements.append({"type": "button", "action_id": "diag_open", "url": link, "text": {"type": "plain_text", "text": "Open"}})
    if elements:
        blocks.append({"type": "actions", "block_id": f"diag:{diagnosis_id}", "elements": elements})
    return blocks


def correct_view(d: Diagnosis, private_metadata: str) -> dict[str, Any]:
    """The modal an engineer fills to correct a diagnosis: category, root cause, action, recovery level."""
    cats = [{"text": {"type": "plain_text", "text": c.value}, "value": c.value} for c in Category]
    levels = [{"text": {"type": "plain_text", "text": lv.value}, "value": lv.value} for lv in RecoveryLevel]
    current = {"text": {"type": "plain_text", "text": d.category.value}, "value": d.category.value}
    return {
        "type": "modal", "callback_id": CORRECT_VIEW, "private_metadata": private_metadata[:3000],
        "title": {"type": "plain_text", "text": "Correct diagnosis"},
        "submit": {"type": "plain_text", "text": "Save"},
        "blocks": [
            {"type": "input", "block_id": "category", "label": {"type": "plain_text", "text": "Category"},
             "element": {"type": "static_select", "action_id": "value", "options": cats, "initial_option": current}},
            {"type": "input", "block_id": "root_cause", "label": {"type": "plain_text", "text": "Root cause"},
             "element": {"type": "plain_text_input", "action_id": "value", "multiline": True,
                         "initial_value": clip(d.root_cause.summary, 2900)}},
            {"type": "input", "block_id": "action", "label": {"type": "plain_text", "text": "What fixed it"},
             "element": {"type": "plain_text_input", "action_id": "value", "multiline": True}},
            {"type": "input", "block_id": "level", "optional": True, "label": {"type": "plain_text", "text": "Recovery level"},
             "element": {"type": "static_select", "action_id": "value", "options": levels}},
        ],
    }
