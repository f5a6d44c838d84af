"""The model's structured answer: JSON schema, parsing, and the checks every claim must pass.

The model answers ``{"summary": "<2-3 sentences, each ending with [E#] ids>", "category": ...}``
(``category`` only when the diagnosis is ``unknown``). :func:`parse_answer` extracts and validates
the JSON with pydantic; :func:`check_answer` then keeps a sentence only when

1. it cites at least one id that exists in the evidence pack (ids that do not exist are removed;
   a sentence left without any is an *uncited claim* and dropped);
2. every token of it that carries a digit or a path (``rank 7``, ``gpu-node-040``, ``2.00``, ``/ckpt/x``)
   appears somewhere in the facts or items the model was shown (*grounding*: a number or a name the
   model invented drops the sentence);
3. it gives no action or command and repeats no instruction (``restart``, ``kubectl``, ``rm -rf``,
   ``ignore previous instructions``...): the model never decides the recovery, and instructions found
   in logs must not come back out.

At most ``max_sentences`` sentences are kept. An answer with no sentence left raises
:class:`AnswerError`, which makes :func:`diag_service.llm.summarize` retry once and then fall back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from diag_service.domain import Category
from diag_service.llm.config import SUGGESTABLE, LlmError
from diag_service.llm.pack import EvidencePack

MAX_SUMMARY_CHARS = 900


class AnswerError(LlmError):
    """The model's answer is not valid JSON of the expected shape, or no claim survived the checks."""


class ModelAnswer(BaseModel):
    """What the model must return (validated with pydantic)."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1, max_length=4000)
    category: str | None = None


class CheckedAnswer(BaseModel):
    """A model answer after the claim checks: ``text`` keeps only the sentences that passed."""

    text: str
    citations: list[str]
    suggested_category: Category | None = None
    dropped: list[str] = Field(default_factory=list, description="'reason: sentence' for each dropped sentence.")


def answer_schema(ids: list[str], with_category: bool) -> dict[str, Any]:
    """JSON Schema of the answer, for backends that constrain decoding (llama.cpp, OpenAI ``json_schema``)."""
    props: dict[str, Any] = {"summary": {"type": "string", "minLength": 20, "maxLength": 700}}
    required = ["summary"]
    if with_category:
        props["category"] = {"anyOf": [{"type": "string", "enum": SUGGESTABLE}, {"type": "null"}]}
        required.append("category")
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_answer(text: str) -> ModelAnswer:
    """Parse the first JSON object in ``text`` (code fences and surrounding prose are tolerated).

    Raises :class:`AnswerError` when there is no JSON object or it does not validate.
    """
    if not isinstance(text, str) or not text.strip():
        raise AnswerError("empty answer")
    m = _FENCE.search(text)
    body = m.group(1) if m else text
    start = body.find("{")
    if start < 0:
        raise AnswerError("no JSON object in the answer")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as exc:
        raise AnswerError(f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(obj, dict):
        raise AnswerError("the answer is not a JSON object")
    try:
        return ModelAnswer.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AnswerError(f"invalid answer: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


_CITE = re.compile(r"[\[(]\s*((?:E\s*\d+)(?:\s*(?:,|;|and|&)?\s*E?\s*\d+)*)\s*[\])]")
_ID = re.compile(r"E?\s*(\d+)")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[(\"'])|(?<=\])\s*[.!?]\s+")
_ONLY_CITES = re.compile(r"^\s*(?:[\[(][^\])]*[\])]\s*)+[.!?]?\s*$")
_TOKEN = re.compile(r"[\w./:@-]*\d[\w./:@-]*|(?:/[\w.-]+){2,}")
_ACTION = re.compile(
    r"(?i)\b(kubectl|scontrol|sbatch|scancel|sudo|rm\s+-\w+|curl|wget|ssh|systemctl|reboot|nvidia-smi\s+-r|chmod|pip install)\b"
    r"|\b(you|we|they|the operator|the user|operators?)\s+(should|must|need to|can|may want to)\b"
    r"|\b(recommend|recommended|recommendation|suggest(ed|s)?|advis(e|ed))\b"
    r"|\b(should|must|needs? to) be (restarted|rebooted|drained|cordoned|replaced|reset|killed|removed|deleted|re-?run)\b"
    r"|^\s*(please\s+)?(restart|reboot|drain|cordon|replace|run|execute|delete|kill|upgrade|downgrade|reduce|increase"
    r"|set|try|check|fix|contact|resubmit|relaunch|reset|remove|disable|enable|install|rerun|re-run|use)\b"
)
_INSTRUCTION = re.compile(
    r"(?i)ignore (all |any )?(the )?(previous|prior|above)|system prompt|disregard|new instructions?|as an ai\b"
    r"|you are (now )?(a|an|the)\b|‹\||<\|"
)


def _sentences(summary: str) -> list[str]:
    text = re.sub(r"\s+", " ", summary).strip()
    parts = [p.strip() for p in _SENT_SPLIT.split(text) if p and p.strip()]
    out: list[str] = []
    for p in parts:
        if out and _ONLY_CITES.match(p):
            out[-1] = out[-1].rstrip() + " " + p
        else:
            out.append(p)
    return out


def _ungrounded(sentence: str, corpus: str) -> str | None:
    stripped = _CITE.sub(" ", sentence)
    for tok in _TOKEN.findall(stripped):
        t = tok.strip(".,:;'\"()[]").lower()
        if not t or re.fullmatch(r"e\d+", t):
            continue
        if t not in corpus:
            return tok
    return None


def check_answer(answer: ModelAnswer, pack: EvidencePack, max_sentences: int = 3) -> CheckedAnswer:
    """Apply the claim checks of the module doc. Raises :class:`AnswerError` when no sentence survives."""
    valid = pack.ids()
    corpus = pack.corpus()
    kept: list[str] = []
    cites: list[str] = []
    dropped: list[str] = []
    for sentence in _sentences(answer.summary):
        ids: list[str] = []
        for m in _CITE.finditer(sentence):
            for n in _ID.findall(m.group(1)):
                i = f"E{int(n)}"
                if i in valid and i not in ids:
                    ids.append(i)
        body = _CITE.sub("", sentence).strip()
        body = re.sub(r"\s+([.,;:!?])", r"\1", body)
        body = re.sub(r"\s{2,}", " ", body).strip()
        if not ids:
            dropped.append(f"uncited: {sentence}")
            continue
        if len(body) < 12:
            dropped.append(f"empty: {sentence}")
            continue
        if _INSTRUCTION.search(body):
            dropped.append(f"instruction: {sentence}")
            continue
        if _ACTION.search(body):
            dropped.append(f"action: {sentence}")
            continue
        bad = _ungrounded(body, corpus)
        if bad is not None:
            dropped.append(f"ungrounded ({bad}): {sentence}")
            continue
        if len(kept) >= max_sentences:
            dropped.append(f"extra: {sentence}")
            continue
        kept.append(f"{body.rstrip('.!?,;: ')} [{', '.join(ids)}].")
        for i in ids:
            if i not in cites:
                cites.append(i)
    if not kept:
        reasons = "; ".join(d.split(":", 1)[0] for d in dropped) or "no sentence"
        raise AnswerError(f"no claim survived the checks ({reasons})")
    text = " ".join(kept)
    if len(text) > MAX_SUMMARY_CHARS:
        while len(kept) > 1 and len(" ".join(kept)) > MAX_SUMMARY_CHARS:
            dropped.append(f"too long: {kept.pop()}")
        text = " ".join(kept)
        cites = [c for c in cites if f"{c}]" in text or f"{c}," in text]
    suggested = None
    if pack.category_unknown and answer.category:
        c = answer.category.strip().lower()
        if c in SUGGESTABLE:
            suggested = Category(c)
    return CheckedAnswer(text=text, citations=cites, suggested_category=suggested, dropped=dropped)
