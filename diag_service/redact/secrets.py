"""Secret patterns and their replacement.

Vendor formats (GitHub, GitLab, Hugging Face, Slack, AWS, OpenAI, Stripe, Google, npm, PyPI, JWTs, Azure
keys and SAS, netrc, ``wandb login``, kubeconfig, docker and GCP service-account JSON fields) are data:
``knowledge_base/secrets.yaml`` (:mod:`diag_service.redact.catalog`), each with its vendor's
documentation, examples and counter-examples. This module keeps the generic patterns: PEM and PGP
private-key blocks (also when their body follows on later lines of one event), ``Authorization:
Bearer``/``Basic`` headers, credentials embedded in URLs (``scheme://user:password@host``), secret-named
options on a command line, and ``key=value`` / ``key: value`` pairs whose key names a secret (password,
passwd, secret, token, api key, access key, private key, credentials).

Every pattern runs on RE2 (google-re2: linear time in the text's length, no backtracking), so a
crafted line cannot hold a worker: a 4 KB line of ``a.a.a.`` took seconds under Python's ``re``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import re2

from diag_service.contracts import RawEvent
from diag_service.re2fast import start_finder
from diag_service.redact.catalog import SecretFormat, builtin_secret_formats, compile_re2

REDACTED = "<REDACTED>"

_c = compile_re2


def _keep1(m: re2._Match) -> str:
    return m.group(1) + REDACTED


#: Tokenizer settings (``pad_token = ...``, ``{'eos_token': '</s>'}``) are not secrets.
_SPECIAL_TOKEN_KEY = _c(r"(?i)(?:^|[^\w.-])[\w.-]*\b(?:pad|eos|bos|unk|sep|cls|mask)_token\b")


def _keep1_unless_special(m: re2._Match) -> str:
    return m.group(0) if _SPECIAL_TOKEN_KEY.search(" " + m.group(1)) else m.group(1) + REDACTED


def _keep1_unless_done(m: re2._Match) -> str:
    return m.group(0) if m.group(2).startswith(REDACTED) else m.group(1) + REDACTED


_PEM_BEGIN = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

_Repl = str | Callable[[re2._Match], str]

#: Generic patterns that run before the catalogue's vendor formats.
_BEFORE: list[tuple[re2._Regexp, _Repl]] = [
    (_c(r"(?s)" + _PEM_BEGIN + r".*?(?:" + _PEM_END + r"|$)"), REDACTED),
    (_c(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)\s+)[^\s'\",]+"), _keep1),
    (_c(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"), _keep1),
    (_c(r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@'\"]*:[^/\s@'\"]+@"), lambda m: m.group(1) + REDACTED + "@"),
    # A secret option and its value as separate argv items (a launcher printing its command as a list).
    (
        _c(r"(?i)(['\"]--?[\w-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)['\"]\s*,\s*)'[^']*'"),
        lambda m: m.group(1) + "'" + REDACTED + "'",
    ),
    (
        _c(r"(?i)(['\"]--?[\w-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)['\"]\s*,\s*)\"[^\"]*\""),
        lambda m: m.group(1) + '"' + REDACTED + '"',
    ),
    # ... and on a command line: --password VALUE
    (_c(r"(?i)(\s--?[\w-]*(?:password|passwd|secret|api[_-]?key|access[_-]?key)[ =])(\S+)"), _keep1_unless_done),
]
#: Generic patterns that run after them: a key naming a secret, and its value.
_AFTER: list[tuple[re2._Regexp, _Repl]] = [
    (
        _c(
            r"(?i)(\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
            r"|credentials?)\b[\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}]+)"
        ),
        _keep1_unless_special,
    ),
]
#: Cheap substring test before the generic patterns run (lower-cased text): most lines hold no secret.
_GENERIC_TRIGGERS = ("begin", "auth", "bearer", "://", "pass", "pwd", "secret", "token", "key", "credential")


def _keep1_quoted(m: re2._Match) -> str:
    return m.group(1) + '"' + REDACTED + '"'


def _vendor(f: SecretFormat) -> tuple[re2._Regexp, _Repl]:
    if f.keep == "none":
        return _c(f.pattern), REDACTED
    return _c(f.pattern), (_keep1_quoted if f.quoted else _keep1)


_compiled: tuple[tuple[tuple[re2._Regexp, _Repl], ...], tuple[str, ...]] | None = None


def _patterns() -> tuple[tuple[tuple[re2._Regexp, _Repl], ...], tuple[str, ...]]:
    """``(patterns in order, trigger substrings)``: the generic ones around the catalogue's, built once."""
    global _compiled
    if _compiled is None:
        formats = builtin_secret_formats()
        pats = (*_BEFORE, *(_vendor(f) for f in formats), *_AFTER)
        trig = tuple(dict.fromkeys([*_GENERIC_TRIGGERS, *(t for f in formats for t in f.triggers)]))
        _compiled = (pats, trig)
    return _compiled


_PEM_BEGIN_RE = _c(_PEM_BEGIN)
_PEM_END_RE = _c(_PEM_END)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``<REDACTED>``; unchanged when none is found.

    Time is linear in ``len(text)`` (RE2); a private-key block is replaced from its BEGIN line to
    its END line, or to the end of ``text`` when the END is not in it. The first call reads the
    catalogue (:class:`~diag_service.redact.catalog.SecretsCatalogError` when it is malformed).
    """
    patterns, triggers = _compiled if _compiled is not None else _patterns()
    low = text.lower()
    if not any(t in low for t in triggers):
        return text
    for pattern, repl in patterns:
        text = pattern.sub(repl, text)
    return text


def redact_lines(lines: list[str]) -> list[str]:
    """Redact each of ``lines`` (one event's lines, in order), and every line of a private-key block
    whose BEGIN line is among them: the key's body follows its header on the next lines, which on
    their own look like base64 noise. Returns a list of the same length."""
    out: list[str] = []
    in_key = False
    for line in lines:
        if in_key:
            if _PEM_END_RE.search(line):
                in_key = False
            out.append(REDACTED)
            continue
        red = redact(line)
        if _PEM_BEGIN_RE.search(line) and not _PEM_END_RE.search(line):
            in_key = True
        out.append(red)
    return out


def redact_events(events: Iterable[RawEvent]) -> Iterator[RawEvent]:
    """Redact the key, the lines and the string fields of each event in place, and yield it.

    An event none of whose strings holds a trigger substring (lower-cased) is yielded as it is, after one
    test over all its strings joined: :func:`redact` and :func:`redact_lines` would change none of them
    (a private-key BEGIN line holds the trigger ``begin``).
    """
    _, triggers = _compiled if _compiled is not None else _patterns()
    joinable = not any("\n" in t for t in triggers)
    # one re2 pass over the lower-cased UTF-8 bytes finds any trigger (a literal alternation: substring
    # containment exactly) about 3x faster than testing the ~40 triggers one by one
    any_trigger = start_finder(re2.compile("|".join(re2.escape(t) for t in triggers)))
    for ev in events:
        if joinable:
            low = "\n".join([ev.key, *ev.lines, *ev.fields.values()]).lower().encode("utf-8", "surrogatepass")
            if any_trigger(low, 0, len(low)) < 0:
                yield ev
                continue
        ev.key = redact(ev.key)
        ev.lines = redact_lines(ev.lines)
        if ev.fields:
            ev.fields = {k: redact(v) for k, v in ev.fields.items()}
        yield ev
