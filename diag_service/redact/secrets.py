"""Secret patterns and their replacement.

Patterns follow the token formats their vendors document: GitHub ``ghp_``/``github_pat_``, GitLab
``glpat-``, Hugging Face ``hf_``, Slack ``xox?-``/``xapp-`` and incoming-webhook URLs, AWS access
key ids ``AKIA``/``ASIA``, OpenAI-style ``sk-``, Stripe ``sk_live_``/``rk_``, Google API keys
``AIza`` and OAuth tokens ``ya29.``/``1//``, npm ``npm_``, PyPI ``pypi-``, JWTs, PEM and PGP
private-key blocks (also when their body follows on later lines of one event), Azure storage
``AccountKey=``/``SharedAccessKey=`` and SAS ``sig=``; plus ``Authorization: Bearer``/``Basic``
headers, credentials embedded in URLs (``scheme://user:password@host``), netrc ``password``
entries, ``wandb login KEY``, kubeconfig ``client-key-data``, docker ``"auth"`` entries, GCP
service-account JSON fields, and ``key=value`` / ``key: value`` pairs whose key names a secret
(password, passwd, secret, token, api key, access key, private key, credentials).

Every pattern runs on RE2 (google-re2: linear time in the text's length, no backtracking), so a
crafted line cannot hold a worker: a 4 KB line of ``a.a.a.`` took seconds under Python's ``re``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import re2

from diag_service.contracts import RawEvent

REDACTED = "<REDACTED>"

_OPTS = re2.Options()
_OPTS.max_mem = 64 << 20  # the DFA's memory for the largest pattern set; far above what these need


def _c(pattern: str) -> re2._Regexp:
    return re2.compile(pattern, _OPTS)


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

_PATTERNS: list[tuple[re2._Regexp, str | Callable[[re2._Match], str]]] = [
    (_c(r"(?s)" + _PEM_BEGIN + r".*?(?:" + _PEM_END + r"|$)"), REDACTED),
    (_c(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)\s+)[^\s'\",]+"), _keep1),
    (_c(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"), _keep1),
    (_c(r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@'\"]*:[^/\s@'\"]+@"), lambda m: m.group(1) + REDACTED + "@"),
    # Slack incoming webhooks: the path is the credential.
    (_c(r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+"), _keep1),
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
    (_c(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}\b"), REDACTED),
    (_c(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),
    (_c(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),
    (_c(r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[A-Za-z0-9-]{10,}"), REDACTED),
    (_c(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (_c(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}"), REDACTED),
    (_c(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"), REDACTED),
    (_c(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),
    (_c(r"\bya29\.[0-9A-Za-z_-]{20,}|\b1//0[0-9A-Za-z_-]{30,}"), REDACTED),
    (_c(r"\bnpm_[A-Za-z0-9]{36}\b"), REDACTED),
    (_c(r"\bpypi-[A-Za-z0-9_-]{50,}"), REDACTED),
    (_c(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
    # Azure storage / service-bus connection strings and SAS tokens.
    (_c(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)[^;\s'\"]+"), _keep1),
    (_c(r"([?&]sig=)[A-Za-z0-9%+/=_-]{10,}"), _keep1),
    # netrc entries (also what `wandb login` writes) and `wandb login KEY`.
    (_c(r"(?i)(\bmachine\s+\S+\s+(?:login\s+\S+\s+)?password\s+)\S+"), _keep1),
    (_c(r"(?i)(\bwandb\s+login\s+(?:--\S+\s+)*)[0-9a-f]{40}\b"), _keep1),
    # kubeconfig, docker config.json, GCP service-account JSON.
    (_c(r"(?i)(\bclient-key-data\s*:\s*)\S+"), _keep1),
    (_c(r"(\"(?:auth|identitytoken|private_key_id|private_key|client_secret|refresh_token)\"\s*:\s*)\"[^\"]*\""),
     lambda m: m.group(1) + '"' + REDACTED + '"'),
    (
        _c(
            r"(?i)(\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
            r"|credentials?)\b[\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}]+)"
        ),
        _keep1_unless_special,
    ),
]
# Cheap substring test before the patterns run (lower-cased text): most lines hold no secret.
_TRIGGERS = (
    "begin", "auth", "bearer", "://", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_",
    "xox", "xapp-", "akia", "asia", "sk-", "sk_", "rk_", "pk_", "aiza", "ya29.", "1//0", "npm_", "pypi-", "eyj",
    "pass", "pwd", "secret", "token", "key", "credential", "sig=", "sharedaccess", "machine", "wandb",
)

_PEM_BEGIN_RE = _c(_PEM_BEGIN)
_PEM_END_RE = _c(_PEM_END)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``<REDACTED>``; unchanged when none is found.

    Time is linear in ``len(text)`` (RE2); a private-key block is replaced from its BEGIN line to
    its END line, or to the end of ``text`` when the END is not in it.
    """
    low = text.lower()
    if not any(t in low for t in _TRIGGERS):
        return text
    for pattern, repl in _PATTERNS:
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
    """Redact the key, the lines and the string fields of each event in place, and yield it."""
    for ev in events:
        ev.key = redact(ev.key)
        ev.lines = redact_lines(ev.lines)
        if ev.fields:
            ev.fields = {k: redact(v) for k, v in ev.fields.items()}
        yield ev
