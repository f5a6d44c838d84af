"""Block Kit views of the shared models: a diagnosis with Confirm / Correct buttons, and the correction form.

Pure functions from :mod:`diag_service.domain` models to Slack JSON; no Slack client here.
Limits respected: section text ≤ 3,000 characters, at most 10 fields, header ≤ 150.
"""

from __future__ import annotations

from typing import Any

from diag_service.domain import Category, Diagnosis, RecoveryLevel

CONFIRM = "diag_confirm"
CORRECT = "diag_correct"
CORRECT_VIEW = "diag_correct_view"

_MODE_EMOJI = {"fail_stop": ":red_circle:", "fail_hang": ":double_vertical_bar:", "fail_slow": ":snail:"}


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def summary_text(d: Diagnosis) -> str:
    """One line for notifications: job, category, failure mode and the start of the root cause."""
    return _clip(f"{d.job_id}: {d.category.value} ({d.failure_mode.value}) — {d.root_cause.summary}", 300)


def evidence_lines(d: Diagnosis, n: int = 3) -> list[str]:
    """The first ``n`` evidence lines as ``[rank R @ node, time] file:line`` + text."""
    out = []
    for e in d.root_cause.evidence[:n]:
        where = ", ".join(x for x in (f"rank {e.rank}" if e.rank is not None else "", e.node or "", e.timestamp or "") if x)
        out.append(f"[{where or 'unknown rank'}] {e.file}:{e.line}\n{_clip(e.text, 400)}")
    return out


def diagnosis_blocks(d: Diagnosis, diagnosis_id: str, link: str | None = None, buttons: bool = True) -> list[dict[str, Any]]:
    """The diagnosis for a thread: category, root cause, evidence, similar incidents, action, buttons."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text",
                                    "text": _clip(f"{d.job_id}: {d.category.value} ({d.failure_mode.value})", 150)}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": _clip(f"{_MODE_EMOJI.get(d.failure_mode.value, '')} *Root cause*\n"
                                                   f"{d.root_cause.summary}", 3000)}},
    ]
    fields = [f"*Category*\n{d.category.value}", f"*Who acts*\n{d.responsible.value}",
              f"*Confidence*\n{d.confidence:.0%}"]
    if d.first_failing_rank is not None:
        fields.append(f"*First failing rank*\n{d.first_failing_rank}")
    if d.faulty_nodes:
        fields.append(f"*Faulty nodes*\n{_clip(', '.join(d.faulty_nodes), 200)}")
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields[:10]]})
    if d.narrative is not None and d.narrative.text:
        who = f"model {d.narrative.model}" if d.narrative.source == "model" else "deterministic summary"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip(f"*Summary*\n{d.narrative.text}", 3000)}})
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(f"written by {who}", 150)}]})
    ev = evidence_lines(d)
    if ev:
        body = "\n\n".join(ev).replace("```", "'''")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip(f"*Evidence*\n```{body}```", 3000)}})
    if d.similar_incidents:
        lines = [f"• {_clip(s.title, 120)} ({s.score:.2f}) — {_clip(s.action, 200)}" for s in d.similar_incidents[:3]]
        title = "*Closest past incidents* (none similar enough: this looks new)" if d.novel else "*Similar incidents*"
        text = _clip(title + "\n" + "\n".join(lines), 3000)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    elif d.novel:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "No similar past incident: this looks new."}]})
    if d.recovery is not None:
        r = d.recovery
        text = f"*Recommended action* ({r.level.value})\n{r.action}"
        if r.fix_hint:
            text += f"\n_Fix hint:_ {r.fix_hint}"
        if r.target_nodes:
            text += f"\n_Nodes:_ {', '.join(r.target_nodes[:20])}"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, 3000)}})
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
                         "initial_value": _clip(d.root_cause.summary, 2900)}},
            {"type": "input", "block_id": "action", "label": {"type": "plain_text", "text": "What fixed it"},
             "element": {"type": "plain_text_input", "action_id": "value", "multiline": True}},
            {"type": "input", "block_id": "level", "optional": True, "label": {"type": "plain_text", "text": "Recovery level"},
             "element": {"type": "static_select", "action_id": "value", "options": levels}},
        ],
    }
