"""The package's one tolerant JSONL reader (``diag_service.jsonl``) on what crashes and hand edits leave in
real feeds: a bad line, a truncated last line, invalid UTF-8, a huge line, deep nesting, gzip."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from diag_service.jsonl import BadLine, iter_jsonl, read_jsonl

#: Lines as the lab's train.py writes them (timing-rank-R.jsonl).
TIMING = [
    {"rank": 1, "node": "node0", "step": s, "start": 1764771000.0 + s, "end": 1764771000.8 + s, "compute_s": 0.61,
     "comm_s": 0.12, "data_s": 0.02, "attempt": 0}
    for s in range(4)
]


def _lines(recs: list[dict]) -> list[bytes]:
    return [json.dumps(r).encode() + b"\n" for r in recs]


def test_a_bad_line_in_the_middle_is_skipped_and_reported_with_its_number(tmp_path: Path) -> None:
    body = _lines(TIMING[:2]) + [b'{"rank": 1, "step": 2, "start": \n', b"\n", b"[1, 2]\r\n"] + _lines(TIMING[2:])
    p = tmp_path / "timing-rank-1.jsonl"
    p.write_bytes(b"".join(body))
    skipped: list[BadLine] = []
    got = list(iter_jsonl(p, skipped))
    assert [n for n, _ in got] == [1, 2, 6, 7]
    assert [r for _, r in got] == TIMING
    assert [(b.line, b.kind) for b in skipped] == [(3, "invalid_json"), (5, "not_object")]
    assert skipped[0].reason.startswith("invalid JSON (") and skipped[1].reason == "expected an object, got list"


def test_a_truncated_last_line_is_reported_and_a_complete_one_without_newline_kept(tmp_path: Path) -> None:
    whole = b"".join(_lines(TIMING))
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(whole + json.dumps(TIMING[0]).encode()[:37])  # a writer killed mid-line
    records, skipped = read_jsonl(cut)
    assert records == TIMING
    assert [(b.line, b.kind) for b in skipped] == [(5, "invalid_json")]
    unterminated = tmp_path / "unterminated.jsonl"
    unterminated.write_bytes(whole.rstrip(b"\n"))
    assert read_jsonl(unterminated) == (TIMING, [])


def test_invalid_utf8_inside_a_string_is_replaced_outside_one_the_line_is_bad() -> None:
    src = io.BytesIO(b'{"node": "gpu-\xff\xfe-07", "step": 3}\n{"step": 4}\xff\n{"step": 5}\n')
    skipped: list[BadLine] = []
    got = list(iter_jsonl(src, skipped))
    assert got == [(1, {"node": "gpu-\ufffd\ufffd-07", "step": 3}), (3, {"step": 5})]
    assert [(b.line, b.kind) for b in skipped] == [(2, "invalid_json")]


def test_a_huge_line_is_skipped_without_losing_the_lines_after_it(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    huge = json.dumps({"event": "log", "text": "x" * (3 << 20)}).encode() + b"\n"  # 3 MiB, default limit 1 MiB
    p.write_bytes(_lines(TIMING[:1])[0] + huge + b"".join(_lines(TIMING[1:])))
    records, skipped = read_jsonl(p)
    assert records == TIMING
    assert skipped == [BadLine(2, "too_long", "line longer than 1048576 bytes")]
    # the bound is on the line, not the file: a small limit keeps short lines, also a huge last line
    src = io.BytesIO(b'{"a": 1}\n' + b'{"b": "' + b"y" * 500 + b'"}')
    small: list[BadLine] = []
    assert list(iter_jsonl(src, small, max_line_bytes=64)) == [(1, {"a": 1})]
    assert [(b.line, b.kind) for b in small] == [(2, "too_long")]


def test_a_line_exactly_at_the_limit_is_kept() -> None:
    line = b'{"k": "' + b"z" * 20 + b'"}'
    assert list(iter_jsonl(io.BytesIO(line + b"\n" + line), max_line_bytes=len(line))) == [
        (1, {"k": "z" * 20}), (2, {"k": "z" * 20})]


def test_deep_nesting_and_oversized_integers_are_bad_lines_not_crashes() -> None:
    src = io.BytesIO(b"[" * 200_000 + b"\n" + b'{"step": ' + b"9" * 5000 + b"}\n" + b'{"step": 1}\n')
    skipped: list[BadLine] = []
    assert list(iter_jsonl(src, skipped)) == [(3, {"step": 1})]
    assert [b.kind for b in skipped] == ["invalid_json", "invalid_json"]


def test_gzip_stream_text_lines_and_first_line_offset(tmp_path: Path) -> None:
    p = tmp_path / "timing.jsonl.gz"
    with gzip.open(p, "wb") as f:
        f.write(b"".join(_lines(TIMING)))
    with gzip.open(p, "rb") as fh:
        assert [r for _, r in iter_jsonl(fh)] == TIMING
    text = [json.dumps(TIMING[0]), "oops", json.dumps(TIMING[1])]
    skipped: list[BadLine] = []
    assert [n for n, _ in iter_jsonl(text, skipped, first_line=41)] == [41, 43]
    assert skipped[0].line == 42


def test_a_missing_file_is_empty_for_read_jsonl(tmp_path: Path) -> None:
    assert read_jsonl(tmp_path / "absent.jsonl") == ([], [])


@given(st.lists(st.one_of(
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=10), st.none()), max_size=4),
    st.binary(max_size=30).filter(lambda b: b"\n" not in b),
), max_size=12))
def test_every_object_line_comes_back_in_order_whatever_lies_between(items: list[dict | bytes]) -> None:
    body = b"".join((json.dumps(x).encode() if isinstance(x, dict) else x) + b"\n" for x in items)
    skipped: list[BadLine] = []
    got = list(iter_jsonl(io.BytesIO(body), skipped))
    objects = [(i, x) for i, x in enumerate(items, 1) if isinstance(x, dict)]
    # a junk line may happen to be a JSON object itself; every real record is there, in order
    assert [o for o in objects if o in [(n, r) for n, r in got]] == objects
    blank = sum(1 for x in items if isinstance(x, bytes) and not x.decode("utf-8", "replace").strip())
    assert len(got) + len(skipped) + blank == len(items)  # each line is a record, a reported skip or blank
