"""The evidence pack: the only thing a model ever reads about a failure.

:func:`build_evidence_pack` turns a :class:`~diag_service.domain.Diagnosis` into

- **facts**: what the analyzers decided (failure mode, category, the deciding signature's name, first
  failing rank and node, how many other ranks failed after it). Computed by the pipeline, never taken
  from log text; shown to the model in plain words (:data:`CATEGORY_WORDS`), never as internal tokens;
- **items** ``E1``, ``E2``, ...: candidate evidence in priority order. Candidates, highest priority
  first: the first failure's log line (100), further root-cause lines (89 down), hang/slow findings
  (88, suspects 84), the deciding signature (85; its meaning only: the first sentence of its
  explanation, never the advice that follows), other root-cause events (80 down), the analyzers'
  cascade findings (75 down), the closest similar past incident (72; title and root cause, never its
  action), the other ranks' errors deduplicated by template, with their ranks and nodes (70 down),
  further similar incidents (49 down), other root signatures (44 down), launcher epilogues (30
  down) and context lines (20 down).

**Never in the pack**: the recovery plan, the recovery commands, the similar incidents' actions.

Fitting: candidates are taken by priority while their estimated tokens fit ``budget_tokens`` (an item
that does not fit is skipped whole, and a smaller, lower-priority one may still fit); no item's text
is cut to make room. One item longer than ``max_item_tokens`` (a single log line of kilobytes) is
elided in its middle with an explicit ``[... N chars elided ...]`` marker; that is the only shortening.
Ids are given after fitting, in priority order, so ``E1`` is always the highest-priority item kept.
The prompt shows the items in two groups: this job's log lines and findings (evidence), and the
*background* (:data:`BACKGROUND_KINDS`: a signature's general explanation, past incidents), which
may name the kind of failure or a resemblance but is never stated as what happened.

Every text is redacted again (:func:`diag_service.redact.redact`, defensively: the pipeline already
did), stripped of control characters, collapsed to one line, and chat-template control sequences
(``<|im_start|>``, ``[INST]``, ``<<SYS>>``, ``</s>``, ...) are defused so that a log cannot open a
new chat turn.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from diag_service.domain import Diagnosis, EventRole, EventTemplate, Evidence, SignatureHit
from diag_service.llm.config import PackConfig
from diag_service.redact import redact

PACK_VERSION = "3"

#: How the facts name each category to the model: plain words, never the internal token (``user_code``),
#: which a small model copies into the summary. Written from the category definitions of
#: ``eval/corpus/README.md`` ("Categories, in this project's vocabulary").
CATEGORY_WORDS: dict[str, str] = {
    "gpu_hardware": "a GPU hardware fault",
    "network": "a network fault",
    "gpu_oom": "the GPU ran out of memory",
    "host_oom": "the host ran out of memory",
    "user_code": "a bug in the training script",
    "config": "a configuration problem",
    "data": "a problem with the training data",
    "storage": "a storage or file system problem",
    "framework": "a bug in the framework (PyTorch, NCCL, DeepSpeed, ...)",
    "infrastructure": "a cluster infrastructure problem (scheduler, container, driver, node)",
    "unknown": "not determined from the logs",
}
#: How the facts name each failure mode to the model (plain words, as :data:`CATEGORY_WORDS`).
MODE_WORDS: dict[str, str] = {
    "fail_stop": "the job stopped with an error",
    "fail_hang": "the job hung without progress",
    "fail_slow": "the job ran slower than it should",
}
#: Item kinds that are background knowledge (a signature's general explanation, a past incident), not
#: what this job's logs say: shown to the model apart from the evidence, and never enough to support a
#: claim about what a rank was doing (:func:`diag_service.llm.output.check_answer`, check 8).
BACKGROUND_KINDS = frozenset({"signature", "similar"})

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_SPECIAL = [
    (re.compile(r"<\|"), "‹|"),
    (re.compile(r"\|>"), "|›"),
    (re.compile(r"\[(/?)(INST|SYS|TOOL_CALLS|AVAILABLE_TOOLS)\]", re.I), r"[\1\2 ]"),
    (re.compile(r"<<(/?)SYS>>", re.I), r"‹‹\1SYS››"),
    (re.compile(r"<(/?)(s|start_of_turn|end_of_turn|bos|eos|think|tool_call)>", re.I), r"‹\1\2›"),
]
_WS = re.compile(r"\s+")


class PackItem(BaseModel):
    """One piece of evidence the model may cite by ``id``."""

    id: str = Field(description="E1, E2, ... in priority order.")
    kind: str = Field(description="first_failure, root_line, signature, hang, slow, finding, cascade, similar, summary, context.")
    label: str = Field(description="Where it comes from: ranks, nodes, file:line, counts (computed, not log text).")
    text: str = Field(description="Sanitised, redacted text (a log line, or an analyzer's statement).")
    priority: int
    tokens: int = Field(description="Estimated tokens of the rendered line.")
    ranks: list[int] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    location: str | None = Field(default=None, description="file:line of a log line, or a record id.")

    def render(self) -> str:
        return f"{self.id} ({self.label}): {self.text}"


class EvidencePack(BaseModel):
    """The model's whole input about one failure. ``digest`` identifies it for the summary cache."""

    version: str = PACK_VERSION
    facts: dict[str, str | int | list[str] | None]
    items: list[PackItem]
    dropped: int = Field(default=0, description="Candidates left out by the budget or the item limit.")
    budget_tokens: int
    used_tokens: int
    category_unknown: bool
    signature_ids: list[str] = Field(default_factory=list,
                                     description="Ids of the diagnosis' matched signatures (never shown; never in a summary).")

    def ids(self) -> set[str]:
        return {i.id for i in self.items}

    def item(self, item_id: str) -> PackItem | None:
        return next((i for i in self.items if i.id == item_id), None)

    def facts_text(self) -> str:
        """The facts as one line in plain words, e.g. ``the job stopped with an error; cause: a bug in the
        training script; known failure: Tensor shape or size mismatch; first failing rank 3 on node node1``.

        Internal tokens (``fail_stop``, ``user_code``, "rank unknown") are never written: the model copies
        what it reads (:data:`CATEGORY_WORDS`, :data:`MODE_WORDS`).
        """
        f = self.facts
        mode, cat = str(f["failure_mode"]), str(f["category"])
        parts = [MODE_WORDS.get(mode, mode.replace("_", " ")), "cause: " + CATEGORY_WORDS.get(cat, cat.replace("_", " "))]
        if f.get("signature"):
            parts.append(f"known failure: {f['signature']}")
        if f.get("first_failing_rank") is not None:
            where = f"first failing rank {f['first_failing_rank']}"
            if f.get("first_failing_node"):
                where += f" on node {f['first_failing_node']}"
            parts.append(where)
        else:
            node = f.get("first_failing_node")
            parts.append("the logs do not name the rank that failed first" + (f"; it failed on node {node}" if node else ""))
        if f.get("faulty_nodes"):
            parts.append("faulty nodes " + ", ".join(f["faulty_nodes"]))  # type: ignore[arg-type]
        others = f.get("other_failed_ranks")
        if isinstance(others, int):
            parts.append(f"{others} other rank(s) failed after it" if others else "no other rank failed")
        if f.get("ranks_seen"):
            parts.append(f"{f['ranks_seen']} ranks seen")
        if f.get("hung"):
            parts.append("the job hung")
        if f.get("slow"):
            parts.append("the job ran slow")
        return "; ".join(parts)

    def evidence_text(self) -> str:
        """Every item, one rendered line each (``E1 (label): text``), in id order."""
        return "\n".join(i.render() for i in self.items)

    def log_text(self) -> str:
        """The items that say what happened in this job (log lines, analyzer findings), one per line; ``(none)`` without any."""
        return "\n".join(i.render() for i in self.items if i.kind not in BACKGROUND_KINDS) or "(none)"

    def background_text(self) -> str:
        """The background items (:data:`BACKGROUND_KINDS`), one per line; ``(none)`` without any."""
        return "\n".join(i.render() for i in self.items if i.kind in BACKGROUND_KINDS) or "(none)"

    def corpus(self) -> str:
        """Everything the model was shown, lower-cased (for the grounding check of its answer)."""
        return (self.facts_text() + "\n" + self.evidence_text()).lower()

    def digest(self) -> str:
        """sha256 of the canonical JSON of facts and items (ids, labels, texts)."""
        payload = {
            "v": self.version,
            "facts": self.facts,
            "items": [[i.id, i.kind, i.label, i.text] for i in self.items],
            "unknown": self.category_unknown,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def estimate_tokens(text: str) -> int:
    """Conservative token estimate: one token per 3 characters (logs tokenise at 3-4 chars per token), at least 1."""
    return max(1, math.ceil(len(text) / 3))


def sanitize(text: str) -> str:
    """Redact secrets, drop control characters, defuse chat-template control sequences, collapse whitespace."""
    t = redact(text)
    t = _CONTROL.sub(" ", t)
    for pattern, repl in _SPECIAL:
        t = pattern.sub(repl, t)
    return _WS.sub(" ", t).strip()


def _elide(text: str, max_tokens: int) -> str:
    max_chars = max_tokens * 3
    if len(text) <= max_chars:
        return text
    marker_room = 40
    keep = max(16, max_chars - marker_room)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    return f"{text[:head]} [... {len(text) - head - tail} chars elided ...] {text[len(text) - tail:]}"


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?\.)(\s|$)", text.strip())
    return (m.group(1) if m else text).strip().rstrip(";:,")


def _ranks_label(ranks: list[int], n_ranks: int | None = None, limit: int = 8) -> str:
    if not ranks:
        return ""
    n = max(n_ranks or 0, len(ranks))
    shown = ", ".join(str(r) for r in sorted(ranks)[:limit])
    more = f", ... ({n} ranks)" if n > limit else ""
    return f"rank {shown}" if n == 1 else f"ranks {shown}{more}"


def _nodes_label(nodes: list[str], limit: int = 4) -> str:
    if not nodes:
        return ""
    shown = ", ".join(sorted(nodes)[:limit])
    more = f", ... ({len(nodes)} nodes)" if len(nodes) > limit else ""
    return ("node " if len(nodes) == 1 else "nodes ") + shown + more


def _label(*parts: str | None) -> str:
    return ", ".join(sanitize(p) for p in parts if p)


class _Candidate(BaseModel):
    kind: str
    label: str
    text: str
    priority: int
    ranks: list[int] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    location: str | None = None


def _loc(ev: Evidence) -> str:
    return f"{ev.file}:{ev.line}"


def _candidates(d: Diagnosis, cfg: PackConfig) -> list[_Candidate]:
    out: list[_Candidate] = []
    seen_lines: set[str] = set()

    def add_line(kind: str, prefix: str, ev: Evidence, priority: int, extra: str | None = None,
                 ranks: list[int] | None = None, nodes: list[str] | None = None) -> None:
        key = _loc(ev)
        if key in seen_lines:
            return
        seen_lines.add(key)
        r = ranks if ranks is not None else ([ev.rank] if ev.rank is not None else [])
        n = nodes if nodes is not None else ([ev.node] if ev.node else [])
        out.append(_Candidate(kind=kind, label=_label(prefix, _ranks_label(r), _nodes_label(n), extra, key),
                              text=ev.text, priority=priority, ranks=r, nodes=n, location=key))

    evidence = list(d.root_cause.evidence[:4])
    # the first-failure item is the named first failing rank's own line when the evidence holds one (the deciding
    # signature's line can be another rank's: a two-node log whose rank 0 also printed the error later)
    ffr = d.first_failing_rank
    if ffr is not None and evidence and evidence[0].rank is not None and evidence[0].rank != ffr:
        own = next((k for k, ev in enumerate(evidence) if ev.rank == ffr), None)
        if own is not None:
            evidence.insert(0, evidence.pop(own))
    for i, ev in enumerate(evidence):
        if i == 0:
            # a named first failing rank with no line of its own (a silent or absent rank): the first line is a peer's
            # report, and labelled "first failure" it had the model name that peer (trial 38 r07: rank 3 for rank 2)
            peer = ffr is not None and ev.rank is not None and ev.rank != ffr
            add_line("first_failure", f"first error, reported by a peer of rank {ffr}" if peer else "first failure", ev,
                     100)
        else:
            add_line("root_line", "root cause", ev, 90 - i)

    if d.hang is not None and d.hang.hung:
        out.append(_Candidate(kind="hang", label="stack-dump analysis", text=d.hang.explanation, priority=88,
                              ranks=d.hang.stuck_ranks[:64], nodes=d.hang.suspect_nodes[:16]))
        for j, s in enumerate(d.hang.suspects[:2]):
            frames = "; innermost frames: " + " < ".join(s.top_frames[:2]) if s.top_frames else ""
            out.append(_Candidate(kind="hang", label=_label("hang suspect", _ranks_label([s.rank]), s.node and f"node {s.node}",
                                                            f"score {s.score:.2f}"),
                                  text=s.reason + frames, priority=84 - j, ranks=[s.rank], nodes=[s.node] if s.node else []))
    if d.slow is not None and d.slow_found():
        if d.slow.summary:
            out.append(_Candidate(kind="slow", label="timing analysis", text=d.slow.summary, priority=88))
        for j, s in enumerate(d.slow.stragglers[:2]):
            # the factor is the rank's phase over its peers' on its slow steps, not the job's slowdown
            text = (f"rank {s.rank} is a {s.kind.value} straggler: its {s.kind.value} time {s.slowdown_factor:.1f}x its "
                    "peers' on its slow steps")
            if s.stage is not None:
                text += f" in {s.stage}"
            out.append(_Candidate(kind="slow", label=_label("straggler", _ranks_label([s.rank]), s.node and f"node {s.node}"),
                                  text=text, priority=84 - j, ranks=[s.rank], nodes=[s.node] if s.node else []))

    roots = _deciding_roots(d)
    for j, h in enumerate(roots[:3]):
        out.append(_Candidate(
            kind="signature",
            label=_label(f'known failure "{h.name}", general explanation', _ranks_label(h.ranks), _nodes_label(h.nodes)),
            text=_first_sentence(h.explanation), priority=85 if j == 0 else 45 - j, ranks=h.ranks[:64], nodes=h.nodes[:16],
            location=h.signature_id,
        ))

    for j, f in enumerate(d.findings[:3]):
        out.append(_Candidate(kind="finding", label="analyzer finding", text=f, priority=75 - j))

    root_i = symptom_i = summary_i = context_i = 0
    for ev in d.events:
        pr, kind, prefix = _event_priority(ev, root_i, symptom_i, summary_i, context_i)
        if ev.role is EventRole.ROOT:
            root_i += 1
        elif ev.role is EventRole.SYMPTOM:
            symptom_i += 1
        elif ev.role is EventRole.SUMMARY:
            summary_i += 1
        else:
            context_i += 1
        times = f"{ev.count} times" if ev.count > 1 else None
        add_line(kind, prefix, ev.first, pr, times, ranks=ev.ranks[:64], nodes=ev.nodes[:16])

    kept = [s for s in d.similar_incidents if s.score >= cfg.min_similar_score][: cfg.max_similar]
    for j, s in enumerate(kept):
        out.append(_Candidate(
            kind="similar",
            label=_label(f"past incident {s.incident_id}", f"similarity {s.score:.2f}"),
            text=f"{s.title}: {s.root_cause}", priority=72 if j == 0 else 50 - j, location=s.incident_id,
        ))
    return out


def _event_priority(ev: EventTemplate, root_i: int, symptom_i: int, summary_i: int, context_i: int) -> tuple[int, str, str]:
    if ev.role is EventRole.ROOT:
        return 80 - min(root_i, 9), "root_line", "root-cause event"
    if ev.role is EventRole.SYMPTOM:
        return 70 - min(symptom_i, 9), "cascade", "after the first failure"
    if ev.role is EventRole.SUMMARY:
        return 30 - min(summary_i, 9), "summary", "launcher epilogue"
    return 20 - min(context_i, 9), "context", "context"


def _deciding_roots(d: Diagnosis) -> list[SignatureHit]:
    """The root-role signature hits whose category is the diagnosis's, highest priority first. A root signature of
    another category did not decide it: the localizer read it as another failure's consequence, or another finding
    (a hang's collective mismatch, a slowdown) overruled it; offered as "known failure" it invites a summary that
    blames it (a new user's trial 41, r10: a collective mismatch, user_code, whose model summary blamed "a TCP
    connection reset", the network signature the pack had offered as the deciding one)."""
    roots = [h for h in d.signature_hits if h.role is EventRole.ROOT and h.category is d.category]
    return sorted(roots, key=lambda h: -h.priority)


def _facts(d: Diagnosis) -> dict[str, str | int | list[str] | None]:
    first = d.root_cause.evidence[0] if d.root_cause.evidence else None
    if d.first_failing_rank is not None and first is not None and first.rank not in (None, d.first_failing_rank):
        # the first failing rank's node is its own line's: the first evidence line may be another rank's (a hang's
        # waiting rank, a launcher's table on another node); none when no evidence line is that rank's
        first = next((e for e in d.root_cause.evidence if e.rank == d.first_failing_rank), None)
    elif d.first_failing_rank is None and len({e.node for e in d.root_cause.evidence if e.node}) > 1:
        first = None  # no rank named and the evidence spans nodes (every rank raised it): no node failed "first"
    others: set[int] = set()
    for ev in d.events:
        if ev.role in (EventRole.SYMPTOM, EventRole.SUMMARY):
            others.update(ev.ranks)
    if d.first_failing_rank is not None:
        others.discard(d.first_failing_rank)
    roots = _deciding_roots(d)
    return {
        "signature": sanitize(roots[0].name) if roots else None,
        "failure_mode": d.failure_mode.value,
        "category": d.category.value,
        "first_failing_rank": d.first_failing_rank,
        "first_failing_node": (sanitize(d.first_failing_node) if d.first_failing_node
                               else sanitize(first.node) if first is not None and first.node else None),
        "faulty_nodes": [sanitize(n) for n in d.faulty_nodes[:8]],
        "other_failed_ranks": len(others) if d.first_failing_rank is not None else None,
        "ranks_seen": d.input.ranks_seen or None,
        "hung": 1 if d.hang is not None and d.hang.hung else None,
        "slow": 1 if d.slow_found() else None,
    }


def build_evidence_pack(diagnosis: Diagnosis, config: PackConfig | None = None) -> EvidencePack:
    """The evidence pack of ``diagnosis`` (see the module doc for priorities and fitting).

    Raises :class:`TypeError` when ``diagnosis`` is not a :class:`Diagnosis`. Never reads
    ``diagnosis.recovery`` nor the similar incidents' actions.
    """
    if not isinstance(diagnosis, Diagnosis):
        raise TypeError(f"build_evidence_pack expects a Diagnosis, got {type(diagnosis).__name__}")
    cfg = config or PackConfig()
    cands = _candidates(diagnosis, cfg)
    order = sorted(range(len(cands)), key=lambda i: (-cands[i].priority, i))
    chosen: list[tuple[_Candidate, str, int]] = []
    used = 0
    for i in order:
        c = cands[i]
        text = _elide(sanitize(c.text), cfg.max_item_tokens)
        if not text:
            continue
        tokens = estimate_tokens(f"E{len(chosen) + 1} ({c.label}): {text}")
        if len(chosen) >= cfg.max_items or used + tokens > cfg.budget_tokens:
            continue
        chosen.append((c, text, tokens))
        used += tokens
    items = [
        PackItem(id=f"E{k}", kind=c.kind, label=c.label, text=text, priority=c.priority, tokens=tokens,
                 ranks=c.ranks, nodes=[sanitize(n) for n in c.nodes], location=c.location)
        for k, (c, text, tokens) in enumerate(chosen, start=1)
    ]
    return EvidencePack(
        facts=_facts(diagnosis), items=items, dropped=len(cands) - len(items), budget_tokens=cfg.budget_tokens,
        used_tokens=used, category_unknown=diagnosis.category.value == "unknown",
        signature_ids=sorted({h.signature_id for h in diagnosis.signature_hits}),
    )


def cited_items(pack: EvidencePack, ids: Iterable[str]) -> dict[str, str]:
    """``{id: location or label}`` for each id of ``ids`` present in ``pack`` (to show what a citation points at)."""
    out: dict[str, str] = {}
    for i in ids:
        item = pack.item(i)
        if item is not None:
            out[i] = item.location or item.label
    return out
