"""The secret-format catalogue (knowledge_base/secrets.yaml): every example redacted, every counter-example
kept, and a malformed catalogue refused with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.redact import redact
from diag_service.redact.catalog import SecretsCatalogError, builtin_secret_formats, load_secret_formats

FORMATS = builtin_secret_formats()
EXAMPLES = [(f.id, e.line, e.secret) for f in FORMATS for e in f.examples]
COUNTER = [(f.id, c) for f in FORMATS for c in f.counter_examples]


@pytest.mark.parametrize(("fid", "line", "secret"), EXAMPLES, ids=[f"{x[0]}-{i}" for i, x in enumerate(EXAMPLES)])
def test_each_example_loses_its_secret(fid: str, line: str, secret: str) -> None:
    out = redact(line)
    assert secret not in out
    assert "<REDACTED>" in out
    # what precedes the match (the error the line reports) survives
    assert out.startswith(line[: min(line.index(secret), out.index("<REDACTED>"))])


@pytest.mark.parametrize(("fid", "line"), COUNTER, ids=[f"{x[0]}-{i}" for i, x in enumerate(COUNTER)])
def test_each_counter_example_is_unchanged(fid: str, line: str) -> None:
    assert redact(line) == line


def test_every_format_has_a_counter_example_and_a_vendor_source() -> None:
    assert len(FORMATS) >= 19
    for f in FORMATS:
        assert f.counter_examples, f.id
        assert f.source.startswith("https://"), f.id


def test_each_example_is_matched_by_its_own_pattern() -> None:
    from diag_service.redact.catalog import compile_re2

    for f in FORMATS:
        rx = compile_re2(f.pattern)
        for e in f.examples:
            m = rx.search(e.line)
            assert m is not None, f.id
            assert any(t in m.group(0).lower() for t in f.triggers), f.id


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        ("formats:\n  - id: x\n    pattern: '(?<=a)b'\n", 3, "RE2 rejects"),
        ("formats:\n  - id: x\n    pattern: 'ab'\n    keep: prefix\n    triggers: [ab]\n"
         "    source: https://example.com\n    examples:\n      - {line: 'x abcd', secret: abcd}\n", 2, "capturing group"),
        ("formats:\n  - id: x\n    pattern: 'ab'\n    keep: none\n    triggers: [ab]\n"
         "    source: https://example.com\n    examples:\n      - {line: 'x abcd', secret: wxyz}\n", 8, "not part of line"),
        ("formats:\n  - id: x\n    pattern: 'ab'\n    keep: none\n    triggers: [ab]\n    colour: red\n"
         "    source: https://example.com\n    examples:\n      - {line: 'x abcd', secret: abcd}\n", 6, "colour"),
    ],
)
def test_a_malformed_catalogue_is_refused_with_file_and_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    p = tmp_path / "secrets.yaml"
    p.write_text(body)
    with pytest.raises(SecretsCatalogError) as exc:
        load_secret_formats(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:{line}:"), msg
    assert needle in msg, msg
