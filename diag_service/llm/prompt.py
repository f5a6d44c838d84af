"""Prompt templates (files under ``models/prompts/``) rendered into chat messages.

Templates use :class:`string.Template` placeholders (``${facts}``), so braces in log text are
harmless, and substituted values are never re-parsed. The evidence pack is the only case-specific
content; few-shot examples (``examples.yaml``) precede it as earlier turns.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from string import Template

import yaml
from pydantic import BaseModel

from diag_service.llm.config import SUGGESTABLE, LlmConfig, LlmConfigError
from diag_service.llm.pack import EvidencePack

TASK = "Write the summary."
TASK_UNKNOWN = 'Write the summary. Also set "category" to the best fit among ' + ", ".join(SUGGESTABLE) + ", or null."


class Prompts(BaseModel):
    system: str
    user: str
    retry: str
    examples: list[tuple[str, str]]

    def instruction_ngrams(self) -> frozenset[str]:
        """Word 4-grams of the instructions (system prompt, tasks, retry text without placeholders)."""
        from diag_service.llm.output import word_ngrams

        retry = re.sub(r"\$\{\w+\}", " ", self.retry)
        grams: set[str] = set()
        for text in (self.system, retry, TASK, TASK_UNKNOWN):
            grams |= word_ngrams(text)
        return frozenset(grams)

    def digest(self) -> str:
        """sha256 of every template (part of the summary cache key)."""
        h = hashlib.sha256()
        for part in (self.system, self.user, self.retry, *(u + "\x00" + a for u, a in self.examples)):
            h.update(part.encode())
            h.update(b"\x01")
        return h.hexdigest()


def _read(base: Path, rel: str) -> str:
    p = (base / rel) if not Path(rel).is_absolute() else Path(rel)
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LlmConfigError(f"cannot read prompt template {p}: {exc}") from exc


@lru_cache(maxsize=8)
def _load(base: str, system: str, user: str, retry: str, examples: str | None) -> Prompts:
    b = Path(base)
    shots: list[tuple[str, str]] = []
    if examples:
        try:
            raw = yaml.safe_load(_read(b, examples)) or []
        except yaml.YAMLError as exc:
            raise LlmConfigError(f"invalid examples file {examples}: {exc}") from exc
        if not isinstance(raw, list) or not all(isinstance(e, dict) and {"user", "answer"} <= set(e) for e in raw):
            raise LlmConfigError(f"{examples}: expected a list of {{user, answer}} mappings")
        shots = [(str(e["user"]), str(e["answer"])) for e in raw]
    return Prompts(system=_read(b, system).strip(), user=_read(b, user), retry=_read(b, retry), examples=shots)


def load_prompts(config: LlmConfig) -> Prompts:
    """The templates named by ``config.prompts``, relative to ``config.models_dir``. Raises :class:`LlmConfigError`."""
    p = config.prompts
    return _load(str(config.models_dir), p.system, p.user, p.retry, p.examples)


def _case(pack: EvidencePack, prompts: Prompts) -> str:
    return Template(prompts.user).safe_substitute(
        facts=pack.facts_text(),
        evidence=pack.log_text(),
        background=pack.background_text(),
        task=TASK_UNKNOWN if pack.category_unknown else TASK,
    ).strip()


def build_messages(pack: EvidencePack, prompts: Prompts) -> list[dict[str, str]]:
    """System prompt, few-shot turns, then the case: facts, evidence items (log lines and findings),
    background items (general explanations, past incidents), task."""
    msgs = [{"role": "system", "content": prompts.system}]
    for user, answer in prompts.examples:
        msgs.append({"role": "user", "content": user})
        msgs.append({"role": "assistant", "content": answer})
    msgs.append({"role": "user", "content": _case(pack, prompts)})
    return msgs


def retry_messages(first: list[dict[str, str]], error: str, pack: EvidencePack, prompts: Prompts) -> list[dict[str, str]]:
    """The stricter second attempt: the first conversation with the retry instruction (naming the error)
    appended to the case's user turn.

    The rejected answer is not sent back (small models repeat it). The prompt differs from the first
    only at its end, so greedy decoding gives a different answer while llama.cpp reuses the cached
    prefix (system prompt, examples and case) and processes only the instruction.
    """
    ids = ", ".join(sorted(pack.ids(), key=lambda s: int(s[1:])))
    hint = " Also give the category." if pack.category_unknown else ""
    text = Template(prompts.retry).safe_substitute(error=error, ids=ids, category_hint=hint).strip()
    last = dict(first[-1])
    last["content"] = last["content"] + "\n\n" + text
    return [*first[:-1], last]
