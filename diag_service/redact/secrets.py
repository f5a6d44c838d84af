"""Secret patterns and their replacement.

Patterns follow the token formats their vendors document (GitHub ``ghp_``/``github_pat_``, Hugging
Face ``hf_``, Slack ``xox?-``, AWS access key ids ``AKIA``/``ASIA``, OpenAI-style ``sk-``, JWTs,
PEM private keys), plus ``Authorization: Bearer``/``Basic`` headers, credentials embedded in URLs
(``scheme://user:password@host``) and ``key=value`` / ``key: value`` pairs whose key names a secret
(password, passwd, secret, token, api key, access key, private key, credentials).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from diag_service.contracts import RawEvent

REDACTED = "<REDACTED>"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), REDACTED),
    (re.compile(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)\s+)[^\s'\",]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"), r"\1" + REDACTED),
    (re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@'\"]*:[^/\s@'\"]+@"), r"\1" + REDACTED + "@"),
    # A secret option and its value as separate argv items (a launcher printing its command as a list).
    (
        re.compile(
            r"(?i)(['\"]--?[\w-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)['\"]\s*,\s*)(['\"])[^'\"]*\2"
        ),
        r"\1\2" + REDACTED + r"\2",
    ),
    # ... and on a command line: --password VALUE
    (
        re.compile(r"(?i)(\s--?[\w-]*(?:password|passwd|secret|api[_-]?key|access[_-]?key)[ =])(?!<REDACTED>)(\S+)"),
        r"\1" + REDACTED,
    ),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}\b"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"), REDACTED),
    (
        re.compile(
            # tokenizer special-token settings (pad_token = ..., {'eos_token': '</s>'}) are not secrets
            r"(?i)(\b(?![\w.-]*\b(?:pad|eos|bos|unk|sep|cls|mask)_token\b)[\w.-]*"
            r"(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
            r"|credentials?)\b[\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}]+)"
        ),
        r"\1" + REDACTED,
    ),
]
# Cheap substring test before the patterns run (lower-cased text): most lines hold no secret.
_TRIGGERS = (
    "begin", "auth", "bearer", "://", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "xox", "akia",
    "asia", "sk-", "eyj", "pass", "pwd", "secret", "token", "key", "credential",
)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``<REDACTED>``; unchanged when none is found."""
    low = text.lower()
    if not any(t in low for t in _TRIGGERS):
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_events(events: Iterable[RawEvent]) -> Iterator[RawEvent]:
    """Redact the key, the lines and the string fields of each event in place, and yield it."""
    for ev in events:
        ev.key = redact(ev.key)
        ev.lines = [redact(x) for x in ev.lines]
        if ev.fields:
            ev.fields = {k: redact(v) for k, v in ev.fields.items()}
        yield ev
