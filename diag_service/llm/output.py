"""The model's structured answer: JSON schema, parsing, and the checks every claim must pass.

The model answers ``{"summary": "<2-3 sentences, each ending with [E#] ids>", "category": ...}``
(``category`` only when the diagnosis is ``unknown``). :func:`parse_answer` extracts and validates
the JSON with pydantic; :func:`check_answer` then keeps a sentence only when

1. it cites at least one id that exists in the evidence pack (ids that do not exist are removed;
   a sentence left without any is an *uncited claim* and dropped);
2. every specific token of it (one with a digit, a path, a dotted, snake_case or CamelCase name, an
   acronym of 3+ capitals: ``rank 7``, ``gpu-node-040``, ``2.00``, ``/ckpt/x``, ``torch.OutOfMemoryError``,
   ``NCCL``) and every quoted span appears somewhere in the facts or items the model was shown
   (*grounding*: a number, a name or a quote the model invented, or copied from the few-shot
   example, drops the sentence; a few generic acronyms such as GPU and CUDA are exempt); every
   ``rank N`` it names is a rank the pack names;
3. a sentence that claims a resemblance ("resembles", "similar", "past incident") cites a
   similar-incident item;
4. it gives no action or command and repeats no instruction (``restart``, ``kubectl``, ``rm -rf``,
   ``ignore previous instructions``...): the model never decides the recovery, and instructions found
   in logs must not come back out; and it does not claim that the job is fine ("succeeded",
   "all good"), which contradicts every diagnosis.

5. it has at least 4 words and repeats no 4-word sequence of our own instructions (system prompt,
   task, retry text) that the pack does not contain (a small model echoes its instructions);
6. it is *supported* by what it cites: at least one of its content words (4+ letters, not a generic
   word such as "rank", "failed", "process") shares its first five letters with a word of a cited
   item (a sentence such as "the process asked the GPU for more memory" citing a SIGTERM line is
   dropped: it points at evidence that does not say it).

7. it names no internal identifier (:func:`internal_identifiers`): a category or failure-mode token
   (``user_code``, ``fail_stop``, "category network"), "rank unknown", ``None``/``null``, a matched
   signature's id, or an evidence id outside the citation brackets ("as E2 shows"), unless this job's
   log lines contain that very token;
8. what it says happened is supported by *this job's* evidence, not by background text. Evidence: the
   cited log lines and findings, the facts, the deterministic summary
   (:func:`~diag_service.llm.fallback.fallback_summary`), and the cited past incident of a sentence
   that claims a resemblance; background: a signature's general explanation, past incidents. A
   content word (4+ letters, outside :data:`SUPPORT_STOPWORDS` and :data:`NARRATIVE_WORDS`) that
   no evidence word shares the first five letters with drops the sentence when it stands in a
   clause about what the rank was doing ("while", "when", "during", "trying to", ...) or when the
   background has it (the sentence took it from general text). So "rank 3 failed while trying to load
   weights [E1, E2]" is dropped when only the signature's explanation (E2) mentions loading weights;
   a paraphrase found nowhere ("two shapes disagree") is left to check 6;
9. a sentence that says which rank failed first (``rank N`` and "first" in one clause) names the
   diagnosis' first failing rank; when the diagnosis names none, it names none (a sentence that
   claims a resemblance is about the past incident and is not checked);
10. a sentence that places a rank on a node the pack names (``rank 2 on node node0``) puts it where the pack does:
   the facts' first failing rank and its node, or an item of that one rank and that one node
   (:func:`rank_node_pairs`; e.g. "Rank 2 on node node0" for a rank whose lines came from node1).

At most ``max_sentences`` sentences are kept. An answer with no sentence left, or whose kept sentences
cite none of the items that state the failure itself (first failure line, deciding signature, hang
or slow finding: priority >= :data:`LEAD_PRIORITY`), raises
:class:`AnswerError`, which makes :func:`diag_service.llm.summarize` retry once and then fall back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from diag_service.domain import Category, FailureMode
from diag_service.llm.config import SUGGESTABLE, LlmError
from diag_service.llm.fallback import fallback_summary
from diag_service.llm.pack import BACKGROUND_KINDS, EvidencePack, sanitize

MAX_SUMMARY_CHARS = 900
#: Check 10: words that say something failed.
_FAILED = re.compile(r"(?i)\bfail(?:ed|s|ure|ures|ing)?\b|\bcrash(?:ed|es)?\b")
#: Items at or above this priority state the failure itself (first failure line, deciding signature,
#: hang or slow finding); a summary must cite at least one of them.
LEAD_PRIORITY = 84


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


# A sentence character: no brackets, braces, quotes, backslashes, newlines, ! or ?; a dot only inside a
# number (2.00, 2.20.5). So a sentence cannot end, or be glued to the next one ("peer.These"), without
# its citation. File and module names with dots cannot be written: the citation points at them.
_SEGMENT = r"(?:[^\[\]{}\"\\.!?\n]|[0-9]\.[0-9])"


def answer_schema(ids: list[str], with_category: bool, max_sentences: int = 3) -> dict[str, Any]:
    """JSON Schema of the answer, for backends that constrain decoding (llama.cpp, OpenAI ``json_schema``).

    ``summary`` carries a ``pattern``: 1 to ``max_sentences`` sentences of 12-180 characters, each
    ending with `` [E1, E3].`` made of ``ids`` only, with a dot inside a sentence only within a number
    (so every sentence is cited) and no brackets, braces, quotes or backslashes. llama.cpp enforces it while
    decoding; :func:`check_answer` re-checks everything for backends that do not.
    """
    alt = "|".join(re.escape(i) for i in ids) or "E1"
    sentence = rf"{_SEGMENT}{{12,180}} \[(?:{alt})(?:, (?:{alt}))*\]\."
    pattern = rf"^{sentence}(?: {sentence}){{0,{max(0, max_sentences - 1)}}}$"
    props: dict[str, Any] = {"summary": {"type": "string", "minLength": 20, "maxLength": 600, "pattern": pattern}}
    required = ["summary"]
    if with_category:
        props["category"] = {"anyOf": [{"type": "string", "enum": SUGGESTABLE}, {"type": "null"}]}
        required.append("category")
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _salvage(text: str) -> dict | None:
    """An answer cut by the token limit inside ``summary``: keep its complete cited sentences.

    ``{"summary": "A [E1]. B [E2]. C wit`` becomes ``{"summary": "A [E1]. B [E2]."}``; anything else is None.
    """
    m = re.match(r'\{\s*"summary"\s*:\s*"', text)
    end = text.rfind("].")
    if not m or end < m.end():
        return None
    try:
        obj = json.loads(text[: end + 2] + '"}')
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def parse_answer(text: str) -> ModelAnswer:
    """Parse the first JSON object in ``text`` (code fences and surrounding prose are tolerated; an
    answer cut by the token limit keeps its complete cited sentences).

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
        obj = _salvage(body[start:])
        if obj is None:
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
# Tokens that name something specific: a digit, a path, a dotted or snake_case name, CamelCase, an acronym.
_TOKEN = re.compile(
    r"[\w./:@-]*\d[\w./:@-]*"
    r"|(?:/[\w.-]+){2,}"
    r"|\b\w+(?:\.\w+)+\b"
    r"|\b\w*_\w+\b"
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b"
    r"|\b[A-Z]{3,}\b"
)
_QUOTE = re.compile(r"""(?:(?<=[\s(])|^)(['"`])(.{8,}?)\1(?=[\s.,;:)]|$)""")
#: Acronyms too generic to count as a claim.
GENERIC_TOKENS = frozenset({"gpu", "cpu", "cuda", "ram", "nic", "tcp", "api", "http", "json", "pid"})
_RANK_CLAIM = re.compile(r"(?i)\branks?\s+(\d+(?:\s*(?:,|and|&|or)\s*\d+)*)")
_RESEMBLE = re.compile(r"(?i)\b(resembl\w*|similar|past incident|previous incident|earlier incident)")
_ACTION = re.compile(
    r"(?i)\b(kubectl|scontrol|sbatch|scancel|sudo|rm\s+-\w+|curl|wget|ssh|systemctl|reboot|nvidia-smi\s+-r|chmod|pip install)\b"
    r"|\b(you|we|they|the operator|the user|operators?)\s+(should|must|need to|can|may want to)\b"
    r"|\b(recommend|recommended|recommendation|advise|advised)\b"
    r"|\b(should|must|needs? to) be (restarted|rebooted|drained|cordoned|replaced|reset|killed|removed|deleted|re-?run)\b"
    r"|\b(restart|reboot|drain|cordon|resubmit|relaunch|rerun|re-run|uncordon)\b"
    r"|^\s*(please\s+)?(restart|reboot|drain|cordon|replace|run|execute|delete|kill|upgrade|downgrade|reduce|increase"
    r"|set|try|check|fix|contact|resubmit|relaunch|reset|remove|disable|enable|install|rerun|re-run|use)\b"
)
#: Claims that the job is fine contradict every diagnosis (the job failed, hung or ran slow).
_CONTRADICTS = re.compile(
    r"(?i)\b(succeeded|successful(ly)?|all good|everything is (fine|ok|okay|good)|no (error|failure|problem|issue)s?\b"
    r"|(is|was|are|were) (healthy|fine)|nothing (is|was) wrong|did not fail|false alarm)"
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


def split_cited(summary: str) -> list[tuple[str, str, list[str]]]:
    """``(sentence, body, ids)`` for each sentence of ``summary``: the body without its citation markers
    and the ids it cites (``E#``, in order, without repeats; ids not checked against any pack)."""
    out: list[tuple[str, str, list[str]]] = []
    for sentence in _sentences(summary):
        ids: list[str] = []
        for m in _CITE.finditer(sentence):
            for n in _ID.findall(m.group(1)):
                if f"E{int(n)}" not in ids:
                    ids.append(f"E{int(n)}")
        body = _CITE.sub("", sentence).strip()
        body = re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", body)
        out.append((sentence, re.sub(r"\s{2,}", " ", body).strip(), ids))
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def ungrounded_token(sentence: str, corpus: str) -> str | None:
    """The first specific token or quoted span of ``sentence`` that the pack does not contain, else None."""
    stripped = _CITE.sub(" ", sentence)
    for m in _QUOTE.finditer(stripped):
        quoted = _norm(m.group(2)).strip(".,;: ")
        if quoted and quoted not in corpus:
            return m.group(0)
    for tok in _TOKEN.findall(stripped):
        t = tok.strip(".,:;'\"()[]`").lower()
        if not t or re.fullmatch(r"e\d+", t) or t in GENERIC_TOKENS:
            continue
        if t not in corpus:
            return tok
    return None


#: Words too general to show that a sentence is supported by the item it cites (check 6).
SUPPORT_STOPWORDS = frozenset({
    "rank", "ranks", "node", "nodes", "local", "failed", "fails", "failure", "failures", "first", "error", "errors",
    "exception", "runtimeerror", "with", "while", "from", "that", "this", "these", "those", "then", "than", "after",
    "before", "because", "other", "others", "process", "processes", "job", "jobs", "since", "there", "their",
    "which", "were", "have", "been", "into", "also", "same", "each", "only", "when", "where", "what", "shows",
    "shown", "show", "showing", "during", "about", "above", "below", "between", "most", "more", "some", "such",
    "through", "went", "being", "does", "itself", "them", "they", "will", "would", "could", "should", "here", "over",
    "under", "again", "further", "once", "very", "just", "like",
})


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in SUPPORT_STOPWORDS}


def _supported(body: str, cited_text: str) -> bool:
    """Check 6: some content word of ``body`` shares its first five letters with a word of ``cited_text``."""
    words = _content_words(body)
    if not words:
        return True  # nothing but ranks, nodes and generic words: the grounding checks cover it
    stems = {w[:5] for w in re.findall(r"[a-z]{4,}", cited_text.lower())}
    return any(w[:5] in stems for w in words)


#: Words that relate events to each other rather than say what a rank did (check 8 does not ask the
#: evidence for them).
NARRATIVE_WORDS = frozenset({
    "trying", "tried", "attempting", "attempted", "caused", "causing", "cause", "causes", "consequence",
    "consequences", "result", "results", "resulted", "followed", "following", "follow", "waited", "waiting",
    "blocked", "resembles", "resemble", "resembling", "similar", "past", "incident", "earlier", "previous",
    "reported", "reports", "report", "raised", "encountered", "occurred", "happened", "triggered", "leading",
    "likely", "probably", "appears", "seems", "because", "therefore", "logs", "named", "name", "known",
    "while", "whose", "both", "then", "next", "later", "shortly", "another", "many", "several",
})

_CATEGORY_VALUES = sorted((c.value for c in Category), key=len, reverse=True)
_SNAKE_TOKENS = sorted({v for v in [*_CATEGORY_VALUES, *(m.value for m in FailureMode)] if "_" in v}, key=len, reverse=True)
_INTERNAL = re.compile(
    r"(?i:\b(?:" + "|".join(_SNAKE_TOKENS) + r")\b)"
    r"|(?i:\bcategor(?:y|ies)\s*[:=]?\s*(?:" + "|".join(_CATEGORY_VALUES) + r")\b)"
    r"|(?i:\b(?:rank|node)\s*[:=]?\s*(?:unknown|none|null|n/a)\b)"
    r"|\bNone\b(?! of)|\bnull\b"
)
_BARE_ID = re.compile(r"\bE\d+\b")


def internal_identifiers(text: str, pack: EvidencePack | None = None) -> list[str]:
    """The internal identifiers ``text`` names, in order of appearance (empty when there are none).

    Internal: a category or failure-mode token with an underscore (``user_code``, ``gpu_oom``,
    ``fail_stop``), a category after the word "category" ("category network"), ``rank unknown`` /
    ``rank None``, ``None`` or ``null``, an evidence id outside citation brackets (``E2``), and, with
    ``pack``, the snake_case id of any signature the diagnosis matched. A token that this job's log lines (the
    pack's non-background items) contain as such is not counted: it is a quote.
    """
    bare = _CITE.sub(" ", text)
    found = [m.group(0) for m in _INTERNAL.finditer(bare)]
    found += [m.group(0) for m in _BARE_ID.finditer(bare)]
    if pack is not None:
        for sid in (x for x in pack.signature_ids if "_" in x):  # a one-word id ("segfault") is a plain word
            found += [m.group(0) for m in re.finditer(rf"(?i)\b{re.escape(sid)}\b", bare)]
    if not found:
        return []
    logs = " ".join(i.text for i in pack.items if i.kind not in BACKGROUND_KINDS) if pack is not None else ""
    out: list[str] = []
    for tok in found:
        quoted = re.search(rf"(?<!\w){re.escape(tok)}(?!\w)", logs) is not None
        if not quoted and tok not in out:
            out.append(tok)
    return out


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]{4,}", text.lower())}


def _stem_supported(word: str, stems: set[str]) -> bool:
    w = word[:5]
    if w in stems:
        return True
    if len(w) == 4:
        return any(s.startswith(w) for s in stems)
    return any(len(s) == 4 and word.startswith(s) for s in stems)


#: A clause saying what a rank was doing when it failed ("while trying to load weights"): each of its
#: content words must be found in this job's evidence (check 8).
_ACTIVITY = re.compile(r"(?i)\b(?:while|when|during|trying to|attempting to|in the middle of)\b([^,;]*)")


def unsupported_words(body: str, evidence: str, background: str) -> list[str]:
    """Check 8: the content words of ``body`` (4+ letters, outside :data:`SUPPORT_STOPWORDS` and
    :data:`NARRATIVE_WORDS`) that ``evidence`` does not support (no word of it shares the first five
    letters; a four-letter word must be a prefix of one) and that either stand in a clause about what a
    rank was doing (after "while", "when", "during", "trying to", ...) or are found in ``background``
    (taken from general text, not from the log). In order, without repeats; empty when supported."""
    ev, bg = _stems(evidence), _stems(background)
    activity = {w for m in _ACTIVITY.finditer(body) for w in re.findall(r"[a-z]{4,}", m.group(1).lower())}
    out: list[str] = []
    for w in re.findall(r"[a-z]{4,}", body.lower()):
        if w in SUPPORT_STOPWORDS or w in NARRATIVE_WORDS or w in out or _stem_supported(w, ev):
            continue
        if w in activity or _stem_supported(w, bg):
            out.append(w)
    return out


def evidence_sources(pack: EvidencePack, ids: list[str], resemblance: bool, deterministic: str) -> tuple[str, str]:
    """``(evidence, background)`` for check 8 of a sentence citing ``ids``. Evidence: the cited items
    that are not background (label and text), the facts, the deterministic summary ``deterministic``,
    and, for a sentence that claims a ``resemblance``, the cited past incidents. Background: the texts
    of every background item of the pack (:data:`~diag_service.llm.pack.BACKGROUND_KINDS`)."""
    parts = [pack.facts_text(), deterministic]
    for i in ids:
        item = pack.item(i)
        if item is not None and (item.kind not in BACKGROUND_KINDS or (resemblance and item.kind == "similar")):
            parts.append(f"{item.label} {item.text}")
    background = " ".join(i.text for i in pack.items if i.kind in BACKGROUND_KINDS)
    return "\n".join(parts), background


_FIRST_RANK = re.compile(r"(?i)\brank\s+(\d+)\b(?=[^;]*\bfirst\b)|\bfirst\b[^;]*?\brank\s+(\d+)\b")


#: "rank 2 on node node1", "Rank 3 (on gpu-node-002)", "rank 1 at node0": a rank placed on a node
_RANK_ON_NODE = re.compile(r"(?i)\brank\s+(\d+)\s*\(?\s*(?:on|at)\s+(?:node\s+|host\s+)?([A-Za-z][\w.-]*[\w])")


def rank_node_pairs(pack: EvidencePack) -> tuple[set[tuple[int, str]], set[str]]:
    """``(pairs, nodes)``: the (rank, node) pairs the pack states (the facts' first failing rank and its node; every item
    of one rank and one node), and every node it names (check 10: a rank placed on a node the pack never puts it on)."""
    pairs: set[tuple[int, str]] = set()
    nodes: set[str] = {str(n) for n in (pack.facts.get("faulty_nodes") or [])}  # type: ignore[union-attr]
    r, n = pack.facts.get("first_failing_rank"), pack.facts.get("first_failing_node")
    if isinstance(r, int) and isinstance(n, str):
        pairs.add((r, n))
        nodes.add(n)
    for item in pack.items:
        nodes.update(item.nodes)
        if len(item.ranks) == 1 and len(item.nodes) == 1:
            pairs.add((item.ranks[0], item.nodes[0]))
    return pairs, nodes


def first_rank_claim(body: str) -> int | None:
    """The rank ``body`` says failed first (``rank N`` and the word "first" in one clause: "rank 3 on
    node1 failed first", "the first failure on rank 3"), else None (check 9)."""
    m = _FIRST_RANK.search(body)
    return int(m.group(1) or m.group(2)) if m else None


def known_ranks(pack: EvidencePack) -> set[int]:
    """Ranks the pack names: the first failing rank, every item's ranks, and ``rank N`` in item texts."""
    ranks: set[int] = set()
    r = pack.facts.get("first_failing_rank")
    if isinstance(r, int):
        ranks.add(r)
    for item in pack.items:
        ranks.update(item.ranks)
        for m in _RANK_CLAIM.finditer(item.text + " " + item.label):
            ranks.update(int(x) for x in re.findall(r"\d+", m.group(1)))
    return ranks


def word_ngrams(text: str, n: int = 4) -> set[str]:
    """Lower-cased word n-grams of ``text`` (for the prompt-echo check)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


#: A sentence whose word 3-grams repeat this often is a small model's loop, not a claim.
DEGENERATE_REPEATS = 3


def _degenerate(body: str) -> bool:
    """True when one word 3-gram occurs :data:`DEGENERATE_REPEATS` times or more in ``body`` (an answer such as
    "... due to not determined from the logs, not determined from the logs, not determined from the logs ..."
    passes every citation check)."""
    words = re.findall(r"\w+", body.lower())
    grams = [" ".join(words[i:i + 3]) for i in range(len(words) - 2)]
    return bool(grams) and max(grams.count(g) for g in set(grams)) >= DEGENERATE_REPEATS


def check_answer(answer: ModelAnswer, pack: EvidencePack, max_sentences: int = 3,
                 prompt_ngrams: set[str] | frozenset[str] = frozenset()) -> CheckedAnswer:
    """Apply the claim checks of the module doc. Raises :class:`AnswerError` when no sentence survives.

    ``prompt_ngrams``: word 4-grams of our own instructions (:func:`word_ngrams`); a sentence sharing one
    that the pack does not contain echoes the prompt and is dropped.
    """
    valid = pack.ids()
    corpus = pack.corpus()
    deterministic = fallback_summary(pack)[0]
    ranks = known_ranks(pack)
    pairs, nodes = rank_node_pairs(pack)
    slow = pack.facts.get("failure_mode") == FailureMode.FAIL_SLOW.value
    kinds = {i.id: i.kind for i in pack.items}
    item_text = {i.id: f"{i.label} {i.text}" for i in pack.items}
    # the past incidents' ids, as the pack shows them to the model (its labels: "past incident <id>, similarity 0.81")
    incidents = [sanitize(i.location) for i in pack.items if i.kind == "similar" and i.location]
    pack_ngrams = word_ngrams(corpus) if prompt_ngrams else set()
    kept: list[str] = []
    cites: list[str] = []
    dropped: list[str] = []
    for sentence, body, cited in split_cited(answer.summary):
        ids = [i for i in cited if i in valid]
        if not ids:
            dropped.append(f"uncited: {sentence}")
            continue
        if len(body) < 12 or len(re.findall(r"\w+", body)) < 4:
            dropped.append(f"empty: {sentence}")
            continue
        if _degenerate(body):
            dropped.append(f"repeats itself: {sentence}")
            continue
        echo = (word_ngrams(body) & prompt_ngrams) - pack_ngrams
        if echo:
            dropped.append(f"echoes the prompt ({sorted(echo)[0]}): {sentence}")
            continue
        if _INSTRUCTION.search(body):
            dropped.append(f"instruction: {sentence}")
            continue
        if _CONTRADICTS.search(body):
            dropped.append(f"contradicts the diagnosis: {sentence}")
            continue
        if _ACTION.search(body):
            dropped.append(f"action: {sentence}")
            continue
        internal = internal_identifiers(body, pack)
        if internal:
            dropped.append(f"internal identifier ({internal[0]}): {sentence}")
            continue
        bad = ungrounded_token(body, corpus)
        if bad is not None:
            dropped.append(f"ungrounded ({bad}): {sentence}")
            continue
        if not _supported(body, " ".join(item_text[i] for i in ids)):
            dropped.append(f"unsupported by {', '.join(ids)}: {sentence}")
            continue
        resemblance = _RESEMBLE.search(body) is not None
        missing = unsupported_words(body, *evidence_sources(pack, ids, resemblance, deterministic))
        if missing:
            dropped.append(f"not in the cited log lines ({', '.join(missing[:3])}): {sentence}")
            continue
        claimed = {int(x) for m in _RANK_CLAIM.finditer(body) for x in re.findall(r"\d+", m.group(1))}
        if claimed - ranks:
            dropped.append(f"unknown rank ({', '.join(map(str, sorted(claimed - ranks)))}): {sentence}")
            continue
        wrong = first_rank_claim(body)
        if wrong is not None and not resemblance and wrong != pack.facts.get("first_failing_rank"):
            dropped.append(f"wrong first rank ({wrong}): {sentence}")
            continue
        placed = [(int(m.group(1)), m.group(2)) for m in _RANK_ON_NODE.finditer(body) if m.group(2) in nodes]
        misplaced = next((rn for rn in placed if rn not in pairs), None)
        if misplaced is not None and not resemblance:
            dropped.append(f"rank {misplaced[0]} is not on {misplaced[1]} in the evidence: {sentence}")
            continue
        if slow and not resemblance and _FAILED.search(body):
            dropped.append(f"a slowdown is not a failure: {sentence}")
            continue
        if resemblance and not any(kinds.get(i) == "similar" for i in ids):
            dropped.append(f"resemblance without a past incident: {sentence}")
            continue
        named = [n for n in incidents if n in body]
        if named and not any(n in item_text[i] for n in named for i in ids):
            # the sentence names one past incident and cites another (a clean clone's check: "resembles past incident
            # cuda-oom-eval-no-grad [E4]" with E4 cuda-oom-optimizer-state-init)
            dropped.append(f"names past incident {named[0]} but cites {', '.join(ids)}: {sentence}")
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
    lead = {i.id for i in pack.items if i.priority >= LEAD_PRIORITY}
    if lead and not lead & set(cites):
        cited_lead = [d for d in dropped if any(re.search(rf"\b{re.escape(i)}\b", d) for i in lead)]
        if cited_lead:  # the model stated it, a check took the sentence out: say which and why
            raise AnswerError("the sentence that states the first failure was dropped (" + cited_lead[0][:300] + ")")
        raise AnswerError("the summary does not state the first failure (no sentence cites " + ", ".join(sorted(lead)) + ")")
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
