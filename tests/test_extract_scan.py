"""The extractor's block scan over bytes finds the same lines as the scan over ``str`` it replaced (issue 21).

The pre-filter runs google-re2 over a block's UTF-8 bytes; for a block with non-ASCII text the byte offset
of each candidate line is mapped back to a character offset. These tests hold the fast paths to the
plain definitions on generated text (ASCII and not, lines a match spans included) and on a realistic
console log with progress bars drawn in Unicode blocks before the failure.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from diag_service.contracts import ProgressLog, RawEvent
from diag_service.domain import EventKind
from diag_service.extract.events import (
    _EXIT,
    _KERNEL,
    _NCCL,
    EXCEPTION_LINE,
    PREFILTER_FAST,
    PREFILTER_PARTS,
    PY_WARNING,
    RANK_PREFIX_ALL,
    STACK_DUMP,
    _candidate_lines,
    _classify,
    _line_numbers,
    _line_ranks,
    _utf8,
    clean_key,
    extract_events,
    prefilter_with,
)
from diag_service.ingest.open import Bundle
from diag_service.redact.secrets import redact, redact_events, redact_lines

TOKENS = [
    "\n", " ", "ok ", "step 12 ", "Error", "RuntimeError: boom", "Killed", "\n  process", "é", "日本語", "█▌",
    "Σ", "[rank3]:", "3: ", "[rank12]:", "Traceback (most recent call last):", "frame #4: ", "NCCL WARN x",
    "timeout", "loss=nan", "\t", "1",
]
texts = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
# one signature-style pattern that spans a line break ("Killed\n  process")
SCAN = prefilter_with((r"Killed\s+process", r"RuntimeError: \w+"))


def _lines_by_str(regex, text: str) -> list[int]:
    """The definition: finditer over the str, the start of each match's line, a line once per run."""
    out: list[int] = []
    for m in regex.finditer(text):
        ls = text.rfind("\n", 0, m.start()) + 1
        if not out or out[-1] != ls:
            out.append(ls)
    return out


@settings(max_examples=300, deadline=None)
@given(texts)
def test_candidate_lines_over_bytes_equal_the_str_scan(text: str) -> None:
    for regex in (PREFILTER_FAST, SCAN):
        assert list(_candidate_lines(regex, text, _utf8(text))) == _lines_by_str(regex, text)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 400), st.integers(0, 400))
def test_line_ranks_equal_the_multiline_findall(text: str, a: int, n: int) -> None:
    a = min(a, len(text))
    assert _line_ranks(text, a, a + n) == set(RANK_PREFIX_ALL.findall(text, a, a + n))


def test_non_ascii_console_keys_the_traceback_at_its_own_line() -> None:
    """tqdm bars (U+2588 blocks) and accented paths before the failure: byte and character offsets differ
    by thousands, the OOM must still be read from its own line, with its line number."""
    lines = [f"[rank0]:Epoch 0: {i:3d}%|{'█' * (i // 10)}{' ' * (10 - i // 10)}| {i}/100 [00:{i:02d}<00:30, 3.1it/s]"
             for i in range(100)]
    lines += ["[rank0]:Chargement des données depuis /données/été/shard-00017.bin"] * 50
    lines += [
        "[rank0]:Traceback (most recent call last):",
        '[rank0]:  File "/workspace/entraîner.py", line 88, in <module>',
        "[rank0]:    loss.backward()",
        "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB of which 1.02 GiB is free.",
        "[rank0]:NCCL WARN Cuda failure 'out of memory'",
    ]
    text = "\n".join(lines) + "\n"
    assert not text.isascii()
    blocks = list(Bundle.from_text(text, "train-0.log").blocks())
    events = list(extract_events(blocks, ProgressLog()))
    tb = [e for e in events if e.kind is EventKind.TRACEBACK]
    assert [(e.key, e.line, e.rank) for e in tb] == [(lines[153][len("[rank0]:"):], 154, 0)]
    warn = [e for e in events if "NCCL WARN" in e.key]
    assert [(e.line, e.rank) for e in warn] == [(155, 0)]


SECRETISH = [
    "ok", "token=abc123", "password: hunter2", "frame #1: c10::Error", "https://user:pw@host/x", "BEGIN",
    "-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA", "-----END RSA PRIVATE KEY-----", "ghp_" + "a" * 36,
    "api_key = 'sk-123'", "Watchdog caught collective operation timeout", "KEY",
]
strings = st.lists(st.sampled_from(SECRETISH), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(strings, st.lists(strings, max_size=4), st.dictionaries(st.sampled_from(["traceback", "host"]), strings))
def test_redact_events_equals_redacting_each_string(key: str, lines: list[str], fields: dict[str, str]) -> None:
    ev = RawEvent(kind=EventKind.ERROR_LINE, key=key, lines=list(lines), path="x.log", line=1, fields=dict(fields))
    (out,) = redact_events([dataclasses.replace(ev, lines=list(lines), fields=dict(fields))])
    assert out.key == redact(key)
    assert out.lines == redact_lines(lines)
    assert out.fields == {k: redact(v) for k, v in fields.items()}


def _classify_by_regex(s: str) -> EventKind:
    """The definition: the regexes alone, in order, without the substring tests before them."""
    body = clean_key(s)
    for test, kind in (
        (STACK_DUMP.match, EventKind.STACK_DUMP), (PY_WARNING.search, EventKind.WARNING),
        (EXCEPTION_LINE.match, EventKind.EXCEPTION), (_KERNEL.search, EventKind.KERNEL),
        (_NCCL.search, EventKind.NCCL), (_EXIT.search, EventKind.EXIT),
    ):
        if test(body):
            return kind
    return EventKind.ERROR_LINE


LINE_WORDS = [
    " ", ": ", "UserWarning: ", "warnings.warn(", "torch.", "RuntimeError: ", "NVRM: Xid (PCI:0000:3b:00): 79",
    "ECC", "mce: [Hardware Error]", "kernel: ", "GPU has fallen off the bus", "NCCL WARN", "ncclSystemError",
    "exitcode: -9", "Exited with", "Killed", "SIGKILL", "Signal 6", "core dumped", "Thread 12 (idle)", "E1114 ",
    "[rank3]:", "x", "Xidx", "SIGx", "exit status 1", "killed",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINE_WORDS), max_size=8).map("".join))
def test_classify_equals_the_regexes_alone(line: str) -> None:
    assert _classify(line) == _classify_by_regex(line)


NCCL_TOKENS = [
    "\n", " ", "x" * 300, "[rank3]:", "node-1:4242:4250 [3] NCCL INFO ", "node-2:77:78 [0] init.cc:42 NCCL INFO ",
    "h:1:2 [1] NCCL WARN boom", "comm 0xab12 rank 5 nranks 16 cudaDev 3 ", "comm 0x1 rank 2 nranks 4 ",
    "Channel 00/0 : 3[3] -> 4[4] via P2P", "Channel 01 : 7 -> 2 [receive] via NET", "Ring 02 : 1 -> 6 ",
]
nccl_blocks = st.lists(st.lists(st.sampled_from(NCCL_TOKENS), max_size=40).map("".join), max_size=4)


@settings(max_examples=300, deadline=None)
@given(nccl_blocks)
# a line with more than 512 characters before its INFO words: its origin is searched from the text's start,
# where another process's WARN line is
@example(["h:1:2 [1] NCCL WARN boom\n" + "x" * 600 + "node-1:4242:4250 [3] NCCL INFO comm 0xab12 rank 5 nranks 16 \n"])
def test_deferred_nccl_rank_learning_equals_learning_each_block(blocks: list[str]) -> None:
    from diag_service.extract.events import Extractor

    eager, lazy = Extractor(ProgressLog()), Extractor(ProgressLog())
    for text in blocks:
        eager._learn_nccl_ranks(text)
        lazy._defer_nccl_ranks(text)
    assert lazy._nccl_known() == bool(eager._nccl_comm or eager._nccl_conn)
    assert (lazy._nccl_comm, lazy._nccl_conn) == (eager._nccl_comm, eager._nccl_conn)


@settings(max_examples=300, deadline=None)
@given(texts, st.data(), st.integers(1, 10_000), st.booleans())
def test_line_numbers_equal_counting_from_the_block_start(text: str, data: st.DataObject, first: int, known: bool) -> None:
    line_starts = sorted({0} | {i + 1 for i, c in enumerate(text) if c == "\n" and i + 1 < len(text)})
    starts = sorted(data.draw(st.sets(st.sampled_from(line_starts), max_size=12))) if text else []
    got = _line_numbers(text, starts, first, text.count("\n") if known else None)
    assert got == [first + text.count("\n", 0, s) for s in starts]


RAW_TOKENS = [b"\n", b"ok ", b"step 3 ", b"\r\n", b"\r", b"\x1b[31mred\x1b[0m", b"\xff\xfe", "é日本".encode(), b"Error x", b"  "]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(RAW_TOKENS), max_size=300).map(b"".join), st.integers(16, 600))
def test_blocks_carry_their_text_as_utf8_or_nothing(raw: bytes, block_bytes: int) -> None:
    """The bytes a block carries for the scan are its text's UTF-8; CR, ANSI and bad bytes leave none."""
    import tempfile
    from pathlib import Path

    from diag_service.ingest.open import open_bundle
    from diag_service.limits import BundleLimits

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "rank-0.log").write_bytes(b"ok start\n" + raw)
        blocks = list(open_bundle(d, BundleLimits(block_bytes=block_bytes)).blocks())
    for b in blocks:
        assert b.data is None or b.data == _utf8(b.text)
        assert b.newlines is None or b.newlines == b.text.count("\n")
    clean = all(t not in raw for t in (b"\r", b"\x1b", b"\xff"))
    assert all(b.data is not None for b in blocks[:-1]) or not clean


def test_large_blocks_count_their_newlines_like_the_text() -> None:
    """Blocks over 64 KiB count newlines over their bytes (numpy); the count is the text's, UTF-8 or not."""
    import tempfile
    from pathlib import Path

    from diag_service.ingest.open import open_bundle
    from diag_service.limits import BundleLimits

    lines = [f"[rank{i % 8}]:step {i} loss 2.{i % 97:02d} █▌ é\n" if i % 3 else f"[rank{i % 8}]:ok {i}\n" for i in range(20_000)]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "node-0.log").write_text("".join(lines), encoding="utf-8")
        blocks = list(open_bundle(d, BundleLimits(block_bytes=200_000)).blocks())
    assert len(blocks) > 3 and all(b.data is not None for b in blocks)
    assert [b.newlines for b in blocks] == [b.text.count("\n") for b in blocks]
    assert sum(b.newlines or 0 for b in blocks) == 20_000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*TOKENS, "NCCL INFO", "NCCL", " INFO", "NCCL IN", "ＮCCL INFO"]), max_size=30).map("".join))
def test_nccl_info_bytes_search_equals_the_text_test(text: str) -> None:
    from diag_service.extract.events import _NCCL_INFO

    assert (_NCCL_INFO.search(_utf8(text)) is not None) == ("NCCL INFO" in text)


# --- ASCII blocks read as bytes (Block.ascii) ---------------------------------------------------------------

ASCII_TOKENS = [
    "\n", " ", "ok ", "step", " 12 ", "Iteration", "global_step=", "[2024-11-14 09:13:07,555] ", "\x1c", "\x1f", "\t",
    "[rank3]:", "[rank12]:", "3: ", "Error", "RuntimeError: boom", "Traceback (most recent call last):",
    '  File "/w/train.py", line 8, in main', "frame #4: ", "gpu-node-007:41003:41003 [3] NCCL INFO ",
    "comm 0x5ab rank 5 nranks 16 cudaDev 3", "NCCL WARN x", "timeout", "loss=nan", "loss: 2.31", "Killed",
]
ascii_texts = st.lists(st.sampled_from(ASCII_TOKENS), max_size=60).map("".join)


def _run(block: object) -> tuple[list[RawEvent], ProgressLog]:
    progress = ProgressLog()
    events = list(extract_events([block], progress, (r"Killed\s+process",)))  # type: ignore[list-item]
    return events, progress


@settings(max_examples=300, deadline=None)
@given(ascii_texts, st.booleans())
@example("[2024-11-14 09:13:07,555] step\x1c 12 loss: 2.31\n[rank3]:Iteration\x1f7 Error", True)
def test_an_ascii_block_read_as_bytes_gives_what_its_text_gives(body: str, ranked: bool) -> None:
    """The extractor reads an ASCII block by byte offset with byte patterns (``\\s`` spelled out to keep the
    text patterns' U+001C..U+001F): events, line numbers, ranks, progress and NCCL learning are the text's."""
    from diag_service.ingest.bundle import Block, Source

    text = body + "\n"
    kinds = frozenset({"rank"}) if ranked else frozenset()
    by_text = _run(Block(source=Source(path="node-1.log", prefixes=kinds), text=text, first_line=3))
    data = text.encode("ascii")
    by_bytes = _run(Block(source=Source(path="node-1.log", prefixes=kinds), data=data, first_line=3,
                          newlines=data.count(b"\n"), ascii=True))
    assert by_bytes[0] == by_text[0]
    assert dataclasses.asdict(by_bytes[1]) == dataclasses.asdict(by_text[1])


def test_a_progress_line_with_a_unit_separator_is_sampled_from_bytes_too() -> None:
    """``step\\x1c12``: ``\\s`` of a text pattern takes U+001C, a plain bytes pattern's would not."""
    from diag_service.extract.events import PROGRESS_BYTES, PROGRESS_RE, ascii_bytes_pattern

    line = "[2024-11-14 09:13:07,555] step\x1c12 loss 1.1"
    assert PROGRESS_RE.search(line) is not None
    assert PROGRESS_BYTES.search(line.encode()).group(1) == b"12"
    assert ascii_bytes_pattern(r"a\sb\S").search(b"a\x1fbc") is not None
    assert ascii_bytes_pattern(r"\[\s[]x]").search(b"[\x1c]") is not None  # an escaped '[' opens no class
    for bad in (r"[\s]", r"x[^a\S]", r"[]\s]"):
        try:
            ascii_bytes_pattern(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r}: \\s inside a class must be refused")


def test_ascii_files_become_byte_blocks_and_others_text_blocks(tmp_path) -> None:
    """Read through a 4 KiB block buffer with lines cut across reads: an ASCII file without CR or ESC gives
    byte blocks whose text is the file's; a CRLF file and a UTF-8 file give text blocks as before."""
    from diag_service.ingest.open import open_bundle
    from diag_service.limits import BundleLimits

    ascii_lines = [f"[rank{i % 8}]:[2024-11-14 09:13:{i % 60:02d},555] step {i} loss 2.{i % 97:02d}\n" for i in range(900)]
    (tmp_path / "node-0.log").write_text("".join(ascii_lines), encoding="ascii")
    (tmp_path / "node-1.log").write_bytes(b"ok\r\nError: x\r\n" * 400)
    (tmp_path / "node-2.log").write_text("donn\u00e9es\nRuntimeError: \u00e9t\u00e9\n" * 300, encoding="utf-8")
    blocks = list(open_bundle(str(tmp_path), BundleLimits(block_bytes=4096)).blocks())
    by_file: dict[str, list] = {}
    for b in blocks:
        by_file.setdefault(b.source.path, []).append(b)
    plain = by_file["node-0.log"]
    assert len(plain) > 5 and all(b.ascii and b.data is not None for b in plain)
    assert "".join(b.text for b in plain) == "".join(ascii_lines)
    assert [b.first_line for b in plain] == [1 + sum(p.newlines for p in plain[:i]) for i in range(len(plain))]
    assert not any(b.ascii for b in by_file["node-1.log"] + by_file["node-2.log"])
    assert "".join(b.text for b in by_file["node-1.log"]) == "ok\nError: x\n" * 400
    assert "".join(b.text for b in by_file["node-2.log"]) == "donn\u00e9es\nRuntimeError: \u00e9t\u00e9\n" * 300


def test_output_pasted_after_a_cut_traceback_is_not_its_exception_line() -> None:
    """A traceback cut after its frames, then lspci output (dev gpu-036): the first lspci line is no
    exception line (an exception line starts with the type's name), so the traceback stays incomplete
    and the lspci lines are lines of their own; a timestamped exception line is still the exception."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/home/user/models/detr.py", line 637, in forward',
        "    torch.distributed.all_reduce(num_boxes)",
        '  File "/opt/conda/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py", line 1320, in all_reduce',
        "    work = default_pg.allreduce([tensor], opts)",
    ]
    lspci = [
        "1a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev a1)",
        "1c:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)",
    ]
    blocks = list(Bundle.from_text("\n".join(frames + lspci) + "\n", "node.log").blocks())
    events = list(extract_events(blocks, ProgressLog()))
    tb = [e for e in events if e.kind is EventKind.TRACEBACK]
    assert [e.key.startswith("Traceback (incomplete): ") for e in tb] == [True]
    assert not any("VGA" in line for line in tb[0].lines)

    stamped = frames + ["2024-01-16 18:04:01 RuntimeError: NCCL communicator was aborted on rank 3."]
    blocks = list(Bundle.from_text("\n".join(stamped) + "\n", "node.log").blocks())
    tb = [e for e in extract_events(blocks, ProgressLog()) if e.kind is EventKind.TRACEBACK]
    assert [e.line for e in tb] == [6] and "RuntimeError" in tb[0].key


def test_a_prefixed_traceback_takes_its_workers_own_earlier_timestamp() -> None:
    """torchrun --tee 3 console: the worker's own lines carry ``[default1]:`` only, its traceback
    ``[default1]:[rank1]:`` (torch's rank prefix); the exception's time is the worker's latest stamped line,
    not the launcher's start-up warning above (seen in a real 2-rank gloo run, 2026-12-04)."""
    lines = [
        "W1204 12:59:25.309000 22260 torch/distributed/run.py:874] *****************************************",
        "[default0]:2026-12-04T12:59:30.230Z rank 0 step 40 loss 1.5846",
        "[default1]:2026-12-04T12:59:30.601Z rank 1 step 45 loss 1.2090",
        "[default1]:[rank1]: Traceback (most recent call last):",
        '[default1]:[rank1]:   File "/work/train.py", line 29, in main',
        "[default1]:[rank1]:     loss = nn.functional.mse_loss(model(x), y)",
    ]
    for _ in range(6):
        lines += ['[default1]:[rank1]:   File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", '
                  'line 1789, in _call_impl', "[default1]:[rank1]:     return forward_call(*args, **kwargs)"]
    lines += ["[default1]:[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x33 and 32x4)"]
    blocks = Bundle.from_text("\n".join(lines) + "\n", "console.log").blocks()
    events = [e for e in extract_events(blocks, ProgressLog()) if "shapes cannot be multiplied" in e.key]
    assert events and events[0].rank == 1
    assert events[0].ts is not None
    assert abs(events[0].ts - 1796389170.601) < 1e-3  # 2026-12-04T12:59:30.601Z


# -- the literal scan (diag_service/extract/literal_scan.py): the same candidate lines as the RE2 scan -------------

SCAN_TOKENS = [
    "\n", " ", "ok ", "step 12 ", "[INFO] ", "NCCL INFO ", "Error", "error", "Killed", "\n  process", "exitcode",
    ": -6", "\n: -6 ", "loss: ", "nan", "INF", " inf\n", "frame #4: ", "Assertion `x", "` failed.", "\n\n",
    "CUDA error: operation not supported", "   \n", "Traceback (most recent call last):", "\t", "1", "_", "%",
    "Gradient overflow. Skipping step", "corrupt\n image", "reason:", " Evicted", "ECC", "Xid", "SIGKILL",
]
scan_texts = st.lists(st.sampled_from(SCAN_TOKENS), max_size=50).map("".join)


def _literal_scan(union):
    pytest.importorskip("hyperscan")
    from diag_service.extract.events import literal_scan_for

    scan = literal_scan_for(union)
    assert scan is not None
    return scan


@settings(max_examples=400, deadline=None)
@given(scan_texts)
@example("Killed\n  process")  # a match across lines: the block goes to RE2
@example("loss: \n\n nan\n")
@example("x exitcode\n: -6\nError")
@example("[INFO] x\n")
@example("loss: \nnan")  # a \b literal at the very end of a text without a final newline: its crossing match is seen
def test_literal_scan_finds_the_lines_of_the_re2_scan(text: str) -> None:
    from diag_service.signatures import site_catalog

    data = text.encode("ascii")
    for union in (SCAN, prefilter_with(site_catalog().prefilter_patterns())):
        got = _literal_scan(union).candidate_lines(union, data)
        if got is not None:  # None: a match may cross a line, the caller scans with RE2
            assert got == _lines_by_str(union, text)


def test_literal_scan_leaves_a_block_with_a_match_across_lines_to_re2() -> None:
    assert _literal_scan(SCAN).candidate_lines(SCAN, b"ok\nKilled\n  process 12\n") is None
    assert _literal_scan(SCAN).candidate_lines(SCAN, b"ok\nKilled process 12\n") == [3]


def test_required_literals() -> None:
    from diag_service.extract.literal_scan import required_literals

    assert required_literals(r"[Ee]rror") == {"Error", "error"}
    assert required_literals(r"Root Cause|^Failures:") == {"Root Cause", "Failures:"}
    # RE2's (?i) folds k with KELVIN SIGN
    assert "\u212aill" in required_literals(r"(?i:kill)")
    # a \b after the literal: it is followed by a non-word character ("INF" in "[INFO]" is not a hit)
    lits = required_literals(r"\bloss\b[^\n]{0,40}\b(?:nan|inf)\b")
    assert "nan " in lits and "inf\n" in lits and "info" not in lits
    assert required_literals(r"\d+") is None


def test_literal_scan_cache_round_trip(tmp_path) -> None:
    pytest.importorskip("hyperscan")
    from diag_service.extract.events import _UNION_PARTS
    from diag_service.extract.literal_scan import LiteralScan

    parts = list(_UNION_PARTS[SCAN.pattern])
    data = b"ok\nKilled process 1\nx\nRuntimeError: boom\n"
    built = LiteralScan.cached(parts, tmp_path)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".hsdb", ".json"]
    loaded = LiteralScan.cached(parts, tmp_path)
    assert loaded.candidate_lines(SCAN, data) == built.candidate_lines(SCAN, data) == _lines_by_str(SCAN, data.decode())
    assert loaded.candidate_lines(SCAN, b"Killed\n process") is None
    assert len(list(tmp_path.glob("*.x*.hsdb"))) == 1  # the crossing check's database, kept too
    assert LiteralScan.cached(parts, tmp_path).candidate_lines(SCAN, b"Killed\n process") is None
    for p in tmp_path.glob("*.hsdb"):
        p.write_bytes(b"not a database")  # a damaged cache is rebuilt
    assert LiteralScan.cached(parts, tmp_path).candidate_lines(SCAN, data) == _lines_by_str(SCAN, data.decode())


def test_literal_scan_serves_several_threads_at_once() -> None:
    import threading

    scan = _literal_scan(SCAN)
    data = b"ok\nKilled process 1\n" * 20_000 + b"RuntimeError: boom\n" * 20_000
    want = _lines_by_str(SCAN, data.decode())
    crossing = b"x\nKilled\n  process\n" + data
    errors: list[str] = []

    def work() -> None:
        try:
            for _ in range(10):
                if scan.candidate_lines(SCAN, data) != want or scan.candidate_lines(SCAN, crossing) is not None:
                    errors.append("differs")
        except Exception as e:  # noqa: BLE001 - Hyperscan's ScratchInUseError when a scratch space is shared
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


TS_LINES = [
    "[rank3]:[2024-11-14 09:13:07,555] step 12 loss: 2.31", "[rank4]:E1114 09:33:24.941166 ProcessGroupNCCL.cpp:1",
    "gpu-node-001:123:456 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4]", "[rank3]:NCCL INFO x", "plain line",
    "Nov 14 09:13:07 node-1 kernel: NVRM: Xid", "[rank3]:no clock 12:34", "[rank4]:12:34:5 near", "",
    "2024-11-14T09:13:07.123Z [rank3]:collector stamp", "[rank3]:٠٩:٣٣:٢٤ arabic digits", "[rank3]:é 09:13:07 accent",
    "Nov 14 25:13:07 out of range", "[default3]:E1114 09:33:24.5 worker line",
    "[rank3]:" + "y" * 700, "[rank4]:" + "z" * 900 + " 09:13:07",  # long lines: windows past the 8 KiB precheck
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TS_LINES), min_size=1, max_size=60), st.data(), st.sampled_from(["rank", "role"]))
def test_backward_timestamp_search_equals_the_line_walk(lines: list[str], data: st.DataObject, kind: str) -> None:
    """_ts_before visits only the lines with a clock; the walk over every one of the 40 lines is its definition."""
    from diag_service.extract.events import Extractor, _BlockReader, _who
    from diag_service.ingest import Block, Source
    from diag_service.logformat import attribute

    text = "\n".join(lines) + "\n"
    src = Source(path="node-1.log", prefixes=frozenset({kind}))
    blocks = [Block(source=src, text=text, first_line=1)]
    if text.isascii():
        blocks.append(Block(source=src, data=text.encode(), first_line=1, ascii=True))
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)
    for block in blocks:
        rd = _BlockReader(block)
        ex = Extractor(ProgressLog())
        for i in data.draw(st.lists(st.integers(0, len(lines) - 1), max_size=6)):
            who = _who(src, attribute(lines[i], src.prefixes))
            ex.year = 2024
            got = ex._ts_before(rd, starts[i], who)
            year = ex.year
            ex.year = 2024
            assert got == ex._ts_before_walk(rd, starts[i], who)
            assert year == ex.year


CLOCK_TOKENS = [
    "2024-11-14", " ", "T", "_", "09", ":", "13", "07", ",555", ".941166", "E1114", "E726", "W", "Nov", "14", "Z",
    "+02:00", "[", "]", "gpu-node-1", "123", "456", "[3]", "NCCL ", "INFO ", "٠٩", "x", "\t", "ProcessGroupNCCL.cpp",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(CLOCK_TOKENS), max_size=30).map("".join))
@example("2024-11-14 09:13:07,555 x")
@example("E1114 09:33:24.941166 x")
@example("Nov 14 09:13:07 node-1 kernel: x")
@example("gpu-node-1:123:456 [3] NCCL INFO x")
@example("gpu-node-1:123:456 [3] x NCCL INFO")
def test_the_literal_led_prechecks_hold_every_match(text: str) -> None:
    """parse_timestamp answers None at once without a clock, attribute() skips NCCL_ORIGIN without its hint: each
    regex they guard matches only where the precheck does."""
    from diag_service import logformat as lf

    head = text[:120]
    if any(r.search(head) for r in (lf.ISO_TS, lf.GLOG_TS, lf.SYSLOG_TS)):
        assert lf._CLOCK.search(head)
    if lf.ISO_TS.search(head):
        assert "-" in head or "/" in head
    if lf.NCCL_ORIGIN.search(text):
        assert "NCCL " in text and lf._NCCL_ORIGIN_HINT.search(text)


def test_a_block_the_literal_scan_leaves_to_re2_is_scanned_by_re2(monkeypatch) -> None:
    """LiteralScan.candidate_lines answers None for a block where a match may cross a line: the extractor then
    scans that block with RE2 (it passed None on and failed with a TypeError)."""
    from diag_service.extract import events as ev
    from diag_service.ingest import Block, Source

    pytest.importorskip("hyperscan")
    text = "hello\nKilled\n  process 12\nok\n" * 10
    src = Source(path="a.log", prefixes=frozenset())

    def run() -> list[RawEvent]:
        block = Block(source=src, data=text.encode(), first_line=1, ascii=True, newlines=text.count("\n"))
        return list(extract_events([block], ProgressLog(), (r"Killed\s+process",)))

    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1)
    got = run()
    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1 << 60)
    assert got == run() and len(got) == 10


def test_prefilter_with_keeps_the_patterns_re2_compiles_alone() -> None:
    """The union is compiled at once; when re2 refuses it, each pattern is tried alone and only those kept."""
    from diag_service.extract.events import _UNION_PARTS

    extra = ("a++b", r"foo\d", "(?<=x)y", r"bar\Z", "^Failures:", "(?>at)om", r"ok\w")
    union = prefilter_with(extra)
    assert _UNION_PARTS[union.pattern][len(PREFILTER_PARTS):] == (r"foo\d", "Failures:", r"ok\w")
    union = prefilter_with((r"foo\d", "^Failures:"))
    assert _UNION_PARTS[union.pattern][len(PREFILTER_PARTS):] == (r"foo\d", "Failures:")


def test_a_pattern_led_by_white_space_makes_its_own_line_the_candidate() -> None:
    """``^\\s*Failed to modify QP`` unanchored kept its ``\\s*``: RE2's leftmost match began at the previous line's
    newline and that line became the candidate (the event read "hello world", the signature never matched)."""
    union = prefilter_with((r"^\s*Failed to modify QP \d+ to RTR\s*$", r"(?:^\s+zzz)"))
    text = "hello world\nFailed to modify QP 59 to RTR\nok\n   zzz\n"
    assert list(_candidate_lines(union, text, _utf8(text))) == [12, 45]


def test_sure_literals() -> None:
    """A literal is sure when an alternative without assertions matches it whole: its line then needs no RE2."""
    from diag_service.extract.literal_scan import sure_literals

    parts = [r"[Ee]rror", r"Error\b", r"^Failures:", r"frame #\d+:", r"(?i:kill)", r"Out of (?:memory|mem)"]
    lits = ["Error", "error", "Failures:", "frame #", "kill", "KILL", "Out of memory", "Out of mem", "Out of "]
    assert sure_literals(parts, lits) == {0, 1, 4, 5, 6, 7}
    assert sure_literals([*parts, "(?-i:x)"], lits) == frozenset()  # a flag turned off could narrow others


@settings(max_examples=500, deadline=None)
@given(st.integers(-1, 10_001), st.integers(-1, 14), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
       st.integers(0, 99))
@example(2024, 2, 30, 23, 59, 60)
def test_timegm_equals_the_calendar_one(y: int, mo: int, d: int, h: int, mi: int, s: int) -> None:
    import calendar

    from diag_service.logformat import _timegm

    try:
        want: object = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except ValueError:
        want = ValueError
    try:
        got: object = _timegm(y, mo, d, h, mi, s)
    except ValueError:
        got = ValueError
    assert got == want


PROGRESS_TOKENS = ["Iteration", "iteration", "Iter", "iter", "Step", "step", "global_step", "s", " at", " ", ":", "=",
                   "#", "[", "12", "3", "x", "\x1c", "\t", "ITER", "iterations", "_", "|"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PROGRESS_TOKENS), max_size=20).map("".join))
@example("iterations 5 step 7")
def test_progress_pattern_matches_as_the_class_form(text: str) -> None:
    """PROGRESS_PATTERN spells out its case variants; the definition is the class form it replaced."""
    import re

    from diag_service.extract.events import PROGRESS_RE

    old = re.compile(r"\b(?:[Ii]teration|[Ii]ter|[Ss]tep|global_step)s?(?: at)?\s*[:=#]?\s*\[?\s*(\d{1,12})\b")
    a, b = old.search(text), PROGRESS_RE.search(text)
    assert (a.span(), a.groups()) == (b.span(), b.groups()) if a else b is None
    assert [m.span() for m in old.finditer(text)] == [m.span() for m in PROGRESS_RE.finditer(text)]


def _detect_prefixes_in_turn(sample_lines: list[str]) -> frozenset[str]:
    """detect_prefixes as it was: each prefix regex tried in turn (the definition of its one-alternation match)."""
    from diag_service import logformat as lf

    counts = dict.fromkeys(lf.PREFIX_KINDS, 0)
    hosts: dict[str, int] = {}
    n = 0
    for raw in sample_lines:
        if not raw.strip():
            continue
        n += 1
        line = raw
        m = lf.COLLECTOR_TS.match(line)
        if m:
            counts["stamp"] += 1
            line = line[m.end():]
        m = lf.SYSLOG_PREFIX.match(line)
        if m:
            counts["syslog"] += 1
            line = line[m.end():]
        for _ in range(3):
            r = lf._ray_prefix(line) if line.startswith("(") else None
            if r is not None:
                counts["ray"] += 1
                line = line[r[0]:]
                continue
            for kind, rx in (("mpi", lf.MPI_PREFIX), ("srun", lf.SRUN_PREFIX), ("rank", lf.RANK_PREFIX),
                             ("role", lf.ROLE_PREFIX), ("num", lf.NUM_PREFIX)):
                m = rx.match(line)
                if m:
                    counts[kind] += 1
                    line = line[m.end():]
                    break
            else:
                m = lf.HOST_PREFIX.match(line)
                if m and not lf._NOT_HOSTS.match(m.group(1)):
                    hosts[m.group(1)] = hosts.get(m.group(1), 0) + 1
                    line = line[m.end():]
                    continue
                break
    host_lines = sum(hosts.values())
    if hosts and host_lines >= 2 * len(hosts):
        counts["host"] = host_lines
    if n == 0:
        return frozenset()
    return frozenset(k for k, c in counts.items()
                     if c >= (1 if k in lf.UNAMBIGUOUS_KINDS else max(1, (0.8 if k == "stamp" else 0.2) * n)))


PREFIX_TOKENS = [
    "[rank3]:", "[rank12]:", "[1,3]<stdout>:", "[3]<stderr>:", "  3: ", "3: ", "gpu-node-1: ", "node-2: ", "[default3]:",
    "[5]: ", "INFO: ", "error: ", "(pid=12) ", "(RayTrainWorker pid=7, ip=10.0.0.1) ", "2024-11-14T09:13:07.1Z ",
    "Nov 14 09:13:07 node-1 kernel: ", "Tue Nov 27 13:49:06 2018[1,10]<stdout>:", "x", " ", "RuntimeError: ",
    "nccl: ", "[", "]:", "12",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PREFIX_TOKENS), max_size=6).map("".join), max_size=12))
def test_detect_prefixes_equals_trying_each_prefix_in_turn(lines: list[str]) -> None:
    from diag_service.logformat import detect_prefixes

    assert detect_prefixes(lines) == _detect_prefixes_in_turn(lines)


@pytest.mark.parametrize("shift", [-8, -7, -1, 0, 1, 5])
def test_the_marks_the_literal_scan_reports_stand_for_the_searches_they_replace(monkeypatch, shift: int) -> None:
    """Platform marks (in a block's 64 KiB head and tail windows only) and Ray's rank statements, found in the literal
    scan's own pass (SCAN_MARKS), count as the RE2 and substring searches over the block did: a mark across a
    window's edge is in neither window."""
    from diag_service.extract import events as ev
    from diag_service.ingest import Block, Source

    pytest.importorskip("hyperscan")
    filler = "[rank0]:step 5 ok\n" * ((ev.JOB_WINDOW // 18) + 4000)
    head_cut = ev.JOB_WINDOW + shift - len("kubelet")  # "kubelet" ends at JOB_WINDOW + shift
    body = filler[:head_cut] + "kubelet" + filler[head_cut:]
    suffix = ("(RayTrainWorker pid=4242) Setting up process group for: env:// [rank=7, world_size=8]\n"
              "(RayTrainWorker pid=4242) RuntimeError: CUDA error: an illegal memory access\n")
    at = len(body) + len("srun: ") + len(suffix) - ev.JOB_WINDOW + shift  # "srun: " starts at the tail window's start + shift
    text = body[:at] + "srun: " + body[at:] + suffix
    assert text.index("srun: ") == len(text) - ev.JOB_WINDOW + shift
    src = Source(path="a.log", prefixes=frozenset())

    def run() -> tuple[list[RawEvent], dict, dict]:
        x = ev.Extractor(ProgressLog())
        block = Block(source=src, data=text.encode(), first_line=1, ascii=True, newlines=text.count("\n"))
        events = list(x.feed(block))
        return events, dict(x.progress.platforms), x._ray_rank

    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1)
    got = run()
    monkeypatch.setattr(ev, "BUILD_AFTER_BYTES", 1 << 60)
    assert got == run()
    assert got[2] == {4242: 7} and got[0][-1].rank == 7
    # (the Ray Train worker lines at the end are a mark of the "ray" platform, in the tail window whatever the shift)
    assert got[1] == ({"slurm": 1} if shift >= 0 else {}) | ({"kubernetes": 1} if shift <= 0 else {}) | {"ray": 1}
