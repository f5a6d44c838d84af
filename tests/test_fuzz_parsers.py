"""Property-based fuzzing (hypothesis) of every parser of untrusted input (issue 19).

Each parser gets text or data built from the tokens of its own format (prefixes, stamps, frames, NCCL
and torchelastic fields, JSON of the right shape with values of every type) mixed with arbitrary text,
and must either return or raise the input error it documents (a :class:`~diag_service.errors.DiagError`
of kind ``input``: ``BundleError``, ``DumpError``, ``FlightRecorderError``, ``FeedError``,
``EtprInputError``, the service's ``Refused``). Anything else is a crash an attacker could trigger.

Kept fast for CI: 80-200 examples per parser, no deadline, the whole file well under a minute.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from diag_service.domain import InputReport
from diag_service.errors import DiagError, ErrorKind
from diag_service.extract import ProgressLog, extract_events
from diag_service.hang import parse_dump
from diag_service.hang.flight import FlightRecorderError, analyze_collectives, parse_fr_dump
from diag_service.ingest.bundle import Block, attribute_path, read_bundle
from diag_service.ingest.members import classify, dump_member, fr_archive_rank
from diag_service.logformat import attribute, detect_prefixes, iso, parse_timestamp

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _input_error(exc: BaseException) -> bool:
    return isinstance(exc, DiagError) and exc.kind is ErrorKind.INPUT


# --- strategies ----------------------------------------------------------------------------------------

#: Pieces of real log lines: launcher prefixes, collector stamps, torch/NCCL/torchelastic text, and
#: values at the edges (huge numbers, negatives, control characters, markup).
LOG_TOKENS = [
    "[rank3]:", "[rank999999]:", "[default0]:", "[trainer12]:", "[7]:", "0: ", "  12: ", "[1,3]<stderr>:",
    "gpu-node-040: ", "ip-10-0-0-1: ", "2024-04-10T04:59:03.123456Z ", "2026-13-45T99:99:99Z ",
    "Nov 30 03:12:55 gpu-node-042 kernel: ", "E0726 13:23:24.941166 ", "I1399 25:61:61.1 ",
    "[Fri Jul 26 13:23:24 2024] ", "2024-04-10 04:59:03,123 ", "Traceback (most recent call last):",
    '  File "/w/train.py", line 88, in <module>', '  File "x.py", line 99999999999999999999999, in f',
    "RuntimeError: ", "torch.OutOfMemoryError: CUDA out of memory.", "NCCL WARN", "NCCL INFO",
    "gpu-node-1:123:456 [0] NCCL INFO ", "WorkNCCL(SeqNum=", ", OpType=ALLREDUCE, NumelIn=", "Timeout(ms)=600000)",
    "last completed NCCL work: ", "ProcessGroupNCCL's watchdog", "Xid 79", "NVRM: Xid (PCI:0000:3b:00): 79,",
    "failed (exitcode: -9) local_rank: 0 (pid: 1234)", "  time      : 2024-04-10_04:59:03",
    "  host      : --all", "  rank      : 3 (local_rank: 3)", "  exitcode  : -9 (pid: 77)", "  error_file: <N/A>",
    "iteration 100/ 1000 | elapsed time per iteration (ms): 812.3 |", "step 12 loss 2.31 it/s 3.4",
    "12%|###   | 225/500 [01:23<01:42,  2.69it/s]", "frame #3: c10::", "Thread 123 (idle)",
    "99999999999999999999999999", "-1", "1e400", "nan", "\r", "\t", "\x1b[31m", "\x1b]8;;x\x07", "\x00",
    "[/]", "<!channel>", "\ufffd", "é", ": ", "[", "]", "(", ")", " ",
]


def _lines(max_lines: int = 30) -> st.SearchStrategy[list[str]]:
    piece = st.one_of(st.sampled_from(LOG_TOKENS), st.text(max_size=40), st.integers().map(str))
    line = st.lists(piece, max_size=8).map("".join)
    return st.lists(line, max_size=max_lines)


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["", "1", "-3", "3.5", "1e400", "nan", "inf", "train", "eval", "checkpoint", "completed",
                     "scheduled", "node0", "[0, 1]", "x" * 300]),
)
JSON_ANY = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _record(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), st.one_of(JSON_SCALARS, JSON_ANY), max_size=len(keys))


def _dumps(v: Any) -> str:
    return json.dumps(v, allow_nan=True)


# --- log lines: prefixes, timestamps, the extractor ------------------------------------------------------


@FAST
@given(_lines())
def test_prefix_sniffing_and_attribution(lines: list[str]) -> None:
    kinds = detect_prefixes(lines)
    assert kinds <= {"stamp", "syslog", "mpi", "rank", "role", "num", "srun", "host"}
    for line in lines:
        att = attribute(line, kinds)
        assert isinstance(att.text, str)
        assert att.rank is None or 0 <= att.rank < 10**6


@FAST
@given(st.one_of(st.lists(st.sampled_from(LOG_TOKENS), max_size=6).map("".join), st.text(max_size=120)),
       st.integers(min_value=-10, max_value=100_000))
def test_timestamps(text: str, year: int) -> None:
    ts = parse_timestamp(text, year)
    assert ts is None or math.isfinite(ts)
    assert iso(ts) is None or isinstance(iso(ts), str)


@FAST
@given(_lines(60), st.sampled_from(["rank-3.log", "node0/attempt_0/1/stderr.log", "x/rank_99999999.out", "a.log"]))
def test_extractor_on_lines(lines: list[str], name: str) -> None:
    src = attribute_path(name)
    text = "\n".join(lines) + "\n"
    progress = ProgressLog()
    events = list(extract_events([Block(source=src, text=text, first_line=1)], progress))
    for ev in events:
        assert ev.line >= 1


@SLOW
@given(_lines(40))
def test_the_whole_diagnosis_of_a_pasted_log(lines: list[str]) -> None:
    from diag_service.ingest.open import Bundle
    from diag_service.pipeline import DiagnoseRequest, diagnose

    text = "\n".join(lines)
    try:
        d = diagnose(DiagnoseRequest(path="pasted.log", bundle=Bundle.from_text(text), kb=False, llm=False))
    except DiagError as exc:
        assert _input_error(exc), exc
        return
    assert 0.0 <= d.confidence <= 1.0


@FAST
@given(st.lists(st.one_of(st.sampled_from(["dumps", "0000", "rank-3.txt", "rank_99999999.json", "fr", "timing.jsonl",
                                            "nccl_trace_rank_12", "attempt_0", "..", "node-7.log", "ranks.json",
                                            "timing.parquet", "x.tar.gz"]),
                          st.text(min_size=1, max_size=12)), min_size=1, max_size=5).map("/".join))
@example(name="run/attempt_0/\u00b2/stderr.log")  # '²'.isdigit() but int('²') fails: ValueError out of attribute_path
def test_member_names(name: str) -> None:
    classify(name)
    dp = dump_member(name)
    assert dp is None or 0 <= dp.rank <= 2**20
    assert fr_archive_rank(name) is None or fr_archive_rank(name) >= 0
    src = attribute_path(name)
    assert src.rank is None or src.rank >= 0


# --- stack dumps ---------------------------------------------------------------------------------------------

DUMP_TOKENS = [
    "Process 4242: python train.py", "Python v3.11.7 (/usr/bin/python3.11)", 'Thread 4242 (idle): "MainThread"',
    'Thread 0x7f3a (active+gil): "pt_autograd_0"', "Thread 12 (gil)", "    all_reduce (torch/distributed/c10d.py:2050)",
    "    <module> (train.py:88)", "    f (x.py:99999999999999999999999)", "    (:)", "    g (a (b).py:3)",
    "Current thread 0x00007f3a (most recent call first):", "Thread 0x00007f3b (most recent call first):",
    '  File "/usr/lib/python3.11/threading.py", line 320 in wait', '  File "train.py", line 88 in <module>',
    '  File "x", line 1', "  <no Python frame>", "Fatal Python error: Segmentation fault", "", " ", "\x00",
]


@FAST
@given(st.lists(st.one_of(st.sampled_from(DUMP_TOKENS), st.text(max_size=30)), max_size=40))
def test_pyspy_and_faulthandler_text(lines: list[str]) -> None:
    try:
        threads = parse_dump("\n".join(lines))
    except DiagError as exc:
        assert _input_error(exc), exc
        return
    assert threads and any(t.frames for t in threads)


FRAME = st.fixed_dictionaries({}, optional={
    "name": JSON_SCALARS, "filename": JSON_SCALARS, "short_filename": JSON_SCALARS, "line": JSON_SCALARS,
    "module": JSON_SCALARS})
THREAD = st.fixed_dictionaries({}, optional={
    "thread_name": JSON_SCALARS, "os_thread_id": JSON_SCALARS, "thread_id": JSON_SCALARS, "pid": JSON_SCALARS,
    "active": JSON_SCALARS, "owns_gil": JSON_SCALARS, "current": JSON_SCALARS,
    "frames": st.one_of(st.lists(st.one_of(FRAME, JSON_ANY), max_size=6), JSON_ANY)})


@FAST
@given(st.one_of(st.lists(st.one_of(THREAD, JSON_ANY), max_size=5),
                 st.fixed_dictionaries({"threads": st.one_of(st.lists(THREAD, max_size=4), JSON_ANY)}), JSON_ANY),
       st.integers(min_value=0, max_value=3))
def test_pyspy_json(doc: Any, cut: int) -> None:
    text = _dumps(doc)
    if cut:  # truncated files
        text = text[: len(text) * cut // 4]
    for data in (text, text.encode()):
        try:
            threads = parse_dump(data)
        except DiagError as exc:
            assert _input_error(exc), exc
            continue
        assert threads


FR_ENTRY = st.fixed_dictionaries({}, optional={
    "collective_seq_id": JSON_SCALARS, "p2p_seq_id": JSON_SCALARS, "seq_id": JSON_SCALARS,
    "pg_id": JSON_SCALARS, "process_group": st.one_of(st.lists(JSON_SCALARS, max_size=3), JSON_SCALARS),
    "profiling_name": st.one_of(st.sampled_from(["nccl:all_reduce", "nccl:send 0->1", "nccl:recv 1<-0",
                                                 "nccl:send 99999999999999999999->1", "nccl:broadcast"]), JSON_SCALARS),
    "state": st.one_of(st.sampled_from(["scheduled", "started", "completed"]), JSON_SCALARS),
    "retired": JSON_SCALARS, "is_p2p": JSON_SCALARS, "input_sizes": JSON_ANY, "output_sizes": JSON_ANY,
    "input_dtypes": JSON_ANY, "time_created_ns": JSON_SCALARS,
    "frames": st.one_of(st.lists(FRAME, max_size=3), JSON_ANY)})
FR_DOC = st.fixed_dictionaries({"entries": st.lists(st.one_of(FR_ENTRY, JSON_ANY), max_size=6)}, optional={
    "version": JSON_SCALARS,
    "pg_config": st.one_of(st.dictionaries(st.text(max_size=3), st.one_of(st.fixed_dictionaries({}, optional={
        "name": JSON_SCALARS, "desc": JSON_SCALARS,
        "ranks": st.one_of(st.lists(JSON_SCALARS, max_size=5), JSON_SCALARS)}), JSON_ANY), max_size=3), JSON_ANY),
    "pg_status": st.one_of(st.dictionaries(st.text(max_size=3), st.one_of(st.fixed_dictionaries({}, optional={
        "last_enqueued_collective": JSON_SCALARS, "last_completed_collective": JSON_SCALARS}), JSON_ANY),
        max_size=3), JSON_ANY)})


@FAST
@given(st.lists(st.one_of(FR_DOC, JSON_ANY), min_size=1, max_size=3), st.one_of(st.none(), st.integers(1, 8)))
def test_flight_recorder_json_dumps_and_their_analysis(docs: list[Any], world: int | None) -> None:
    dumps = {}
    for rank, doc in enumerate(docs):
        try:
            dumps[rank] = parse_fr_dump(_dumps(doc).encode(), rank, f"fr_{rank}.json")
        except FlightRecorderError:
            continue
    rep = analyze_collectives(dumps, world)
    assert set(rep.ranks_dumped) == set(dumps)


@FAST
@given(st.lists(st.one_of(FR_DOC, JSON_ANY), min_size=1, max_size=2))
def test_flight_recorder_pickled_dumps(docs: list[Any]) -> None:
    """The same documents as PyTorch writes them (a pickle of plain data), through the restricted unpickler."""
    import pickle

    dumps = {}
    for rank, doc in enumerate(docs):
        try:
            dumps[rank] = parse_fr_dump(pickle.dumps(doc, protocol=4), rank, f"nccl_trace_rank_{rank}")
        except FlightRecorderError:
            continue
    analyze_collectives(dumps)


@FAST
@given(st.binary(max_size=300))
@example(data=b"\x8d" + b"\xff" * 8)  # BINUNICODE8 of an absurd length: OverflowError out of the unpickler
def test_flight_recorder_bytes(data: bytes) -> None:
    for blob in (data, b"\x80\x04" + data, b"{" + data):
        with contextlib.suppress(FlightRecorderError):
            parse_fr_dump(blob, 0, "fr_0")


# --- timing feeds ------------------------------------------------------------------------------------------

FEED_KEYS = ["rank", "step", "start", "end", "compute_s", "comm_s", "data_s", "node", "attempt", "comm_wait_s",
             "stage", "kind", "iterations", "step_time_s", "global_rank", "iteration", "host", "t_start", "t_end"]
LAB = st.fixed_dictionaries({"rank": JSON_SCALARS, "step": JSON_SCALARS, "start": JSON_SCALARS, "end": JSON_SCALARS,
                             "compute_s": JSON_SCALARS, "comm_s": JSON_SCALARS, "node": JSON_SCALARS})


def _good(n: int) -> list[dict[str, Any]]:
    return [{"rank": r, "step": s, "start": s * 1.0, "end": s + 0.9, "compute_s": 0.5, "comm_s": 0.3, "node": f"n{r}"}
            for s in range(n) for r in range(4)]


@FAST
@given(st.lists(st.one_of(_record(FEED_KEYS), LAB, JSON_ANY), max_size=12),
       st.lists(st.sampled_from(["", "{", "not json", "[1, 2]", "\x00", "{\"rank\": 1e400}"]), max_size=3))
@example(records=[{"rank": 1, "step": 7, "kind": "train", "attempt": 2**31}], garbage=[])  # int32 overflow
def test_jsonl_feed_and_the_detector(records: list[Any], garbage: list[str]) -> None:
    from diag_service.slow.feeds import jsonl_feed

    lines = [_dumps(r) for r in _good(6) + records] + garbage
    feed = jsonl_feed(lines, "timing.jsonl")
    assert feed.stats.records == len(feed.batch)
    from diag_service.slow import analyze_slow

    if len(feed.batch):
        analyze_slow(feed)


@FAST
@given(st.lists(st.one_of(LAB, _record(FEED_KEYS)), min_size=1, max_size=10))
def test_stream_records_to_the_detector(records: list[dict[str, Any]]) -> None:
    from diag_service.slow import SlowDetector

    det = SlowDetector()
    det.update(_good(6))
    det.update(records)  # the fast path when every record has the lab's keys, else the general one
    det.update([{**r, "rank": 1} for r in records])
    det.report()


CSV_CELLS = st.one_of(st.sampled_from(["", "1", "-1", "0.5", "1e400", "nan", "x", '"', ",", "99999999999999999999"]),
                      st.text(max_size=6))


@FAST
@given(st.lists(st.sampled_from(FEED_KEYS + ["worker", "time", "batch_time_norm", "", "step"]), min_size=1, max_size=6),
       st.lists(st.lists(CSV_CELLS, max_size=7), max_size=8))
def test_csv_feed(header: list[str], rows: list[list[str]]) -> None:
    from diag_service.slow.feeds import FeedError, csv_feed

    text = "\n".join([",".join(header), *(",".join(r) for r in rows)]) + "\n"
    with contextlib.suppress(FeedError):
        csv_feed(text, "timing.csv")


#: Iteration lines of the frameworks ``slow/logs.py`` reads, with numbers drawn from NUMBERS.
ITERATION_LINES = [
    "iteration {a}/ {b} | consumed samples: 64 | elapsed time per iteration (ms): {x} | lm loss: 2.3",
    "[2024-04-10 04:59:03,123] [INFO] global_step={a}, skipped=0, lr=[3e-4], mom=[(0.9, 0.95)], "
    "CurrSamplesPerSec={x}, MemAllocated=12.3GB",
    "step={a}, skipped=0, lr=[3e-4]", "time (ms) | fwd_microstep: {x} | bwd_microstep: {y} | bwd_allreduce: {y} | step: {x}",
    '"train_batch_size": {a}', "Epoch {a}: {b}%|#   | {a}/{b} [00:01<00:09, {x}it/s, loss=2.31]",
    " {b}%|#   | {a}/{b} [00:01<00:09, {x}s/it]",
]
NUMBERS = st.one_of(st.sampled_from(["0", "5", "12.5", "1.2.3", "..", ".", "1e999", "1e-400", "99999999999999999999",
                                     "9" * 5000, "00007", "3e5"]), st.integers(0, 10**6).map(str))


@SLOW
@given(st.lists(st.tuples(st.sampled_from(ITERATION_LINES), NUMBERS, NUMBERS, NUMBERS, NUMBERS,
                          st.sampled_from(["", "[rank3]: ", "gpu-node-1: ", "[default0]:"])), max_size=25))
@example(lines=[("iteration {a}/ {b} | elapsed time per iteration (ms): {x} |", "99999999999999999999", "10", "5", "5",
                 "")])  # an int64 overflow in the series
@example(lines=[(ITERATION_LINES[0], "5", "10", "1.2.3", "5", "")])  # float('1.2.3')
def test_iteration_lines_of_a_log(lines: list[tuple[str, str, str, str, str, str]]) -> None:
    from diag_service.slow.logs import load_log_bundle

    text = "\n".join(pre + tpl.format(a=a, b=b, x=x, y=y) for tpl, a, b, x, y, pre in lines) + "\n"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "train.log"
        p.write_text(text)
        try:
            feed = load_log_bundle(p)
        except DiagError as exc:
            assert _input_error(exc), exc
            return
        assert feed.stats.records == len(feed.batch)


# --- ETPR events ----------------------------------------------------------------------------------------------

ETPR_KEYS = ["job", "event", "time", "gpus", "step", "throughput", "expected_throughput", "ratio", "slowdown",
             "duration", "onset_time", "rollback_time", "from_step", "mode", "category", "node", "cause", "status",
             "job_id", "timestamp", "ts", "num_gpus", "failure_mode", "reason"]
ETPR_EVENTS = st.sampled_from(["job_start", "job_end", "failure", "restart", "progress", "checkpoint", "slow_detected",
                               "slow_resolved", "diagnosis", "x"])


@SLOW
@given(st.lists(st.one_of(_record(ETPR_KEYS), st.fixed_dictionaries(
    {"job": st.sampled_from(["j1", "j2"]), "event": ETPR_EVENTS, "time": JSON_SCALARS},
    optional={"gpus": JSON_SCALARS, "step": JSON_SCALARS, "mode": JSON_SCALARS, "category": JSON_SCALARS})),
    max_size=12))
# an object where a number belongs, beside its alias: polars panicked casting the struct column
@example(records=[{"job": "j1", "event": "failure", "time": 1, "gpus": {"c": 1.0}, "num_gpus": 8}])
# two aliases of one column and not the column itself: both were renamed to it (DuplicateError)
@example(records=[{"job": "j1", "event": "failure", "timestamp": 1, "ts": 2}])
def test_etpr_events_loader(records: list[dict[str, Any]]) -> None:
    from diag_service.etpr.loaders import load_events

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "events.jsonl"
        p.write_text("\n".join(_dumps(r) for r in records) + "\n")
        try:
            load_events(p)
        except DiagError as exc:
            assert _input_error(exc), exc


LAB_EVENT = st.fixed_dictionaries({"event": st.one_of(st.sampled_from(["started", "failure", "hang_detected", "restart",
                                                                      "finished"]), JSON_SCALARS),
                                    "time": JSON_SCALARS}, optional={"ranks": JSON_SCALARS, "attempt": JSON_SCALARS,
                                                                     "node": JSON_SCALARS, "last_progress_time": JSON_SCALARS})
TRUTH = st.fixed_dictionaries({}, optional={
    "fault_fired": JSON_SCALARS, "control": JSON_SCALARS, "failure_mode": st.one_of(st.just("fail_slow"), JSON_SCALARS),
    "category": JSON_SCALARS, "faulty_node": JSON_SCALARS, "onset_time": JSON_SCALARS, "scenario": JSON_SCALARS})


@SLOW
@given(st.lists(st.one_of(LAB_EVENT, JSON_ANY), max_size=8), st.lists(st.one_of(LAB, _record(FEED_KEYS)), max_size=12),
       st.one_of(TRUTH, JSON_ANY), st.one_of(st.fixed_dictionaries({"ranks": JSON_SCALARS}), JSON_ANY))
@example(events=[{"event": "failure", "time": None}], timing=[],  # None >= True: TypeError
         truth={"fault_fired": True, "failure_mode": "hang", "onset_time": True}, run={})
@example(events=[{"event": "started", "time": 1, "ranks": "many"}], timing=[], truth=[1], run={})  # float('many')
@example(events=[], timing=[{"rank": 0, "step": 10**400, "end": 5.0}], truth={}, run={})  # int -> float overflow
def test_etpr_lab_run(events: list[Any], timing: list[Any], truth: Any, run: Any) -> None:
    from diag_service.etpr.loaders import load_events

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "run-001"
        p.mkdir()
        (p / "events.jsonl").write_text("\n".join(_dumps(e) for e in events) + "\n")
        (p / "timing.jsonl").write_text("\n".join(_dumps(r) for r in _good(12) + timing) + "\n")
        (p / "truth.json").write_text(_dumps(truth))
        (p / "run.json").write_text(_dumps(run))
        try:
            load_events(p)
        except DiagError as exc:
            assert _input_error(exc), exc


@SLOW
@given(st.lists(st.sampled_from(ETPR_KEYS + ["", "x"]), min_size=1, max_size=6, unique=True),
       st.lists(st.lists(st.one_of(CSV_CELLS, ETPR_EVENTS), max_size=7), max_size=8))
@example(header=["job", "event"], rows=[["j1", "failure", "3", "4"]])  # ragged: polars ComputeError
@example(header=[""], rows=[])
def test_etpr_events_csv(header: list[str], rows: list[list[str]]) -> None:
    from diag_service.etpr.loaders import load_events

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "events.csv"
        p.write_text("\n".join([",".join(header), *(",".join(r) for r in rows)]) + "\n")
        try:
            load_events(p)
        except DiagError as exc:
            assert _input_error(exc), exc


@SLOW
@given(st.one_of(st.binary(max_size=300), st.lists(st.one_of(LAB, JSON_ANY), max_size=6).map(lambda v: _dumps(v).encode())),
       st.sampled_from(["timing.jsonl", "timing.json", "timing.csv", "timing.parquet", "timing.jsonl.gz"]))
def test_feed_files_of_arbitrary_bytes(data: bytes, name: str) -> None:
    from diag_service.slow import load_feed

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        try:
            load_feed(p)
        except DiagError as exc:
            assert _input_error(exc), exc


@SLOW
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(st.one_of(st.sampled_from(DUMP_TOKENS), st.text(max_size=20)),
                                                       max_size=12)), max_size=8),
       st.lists(st.sampled_from(["=== Rank 0: http://w0 ===", "=== Rank 99999999: x ===", "Error: 500", ""]),
                max_size=4))
def test_stack_snapshots_and_debug_server_files(snaps: list[tuple[int, list[str]]], heads: list[str]) -> None:
    from diag_service.hang.analyzer import analyze_dumps
    from diag_service.hang.debugserver import debug_server_dumps
    from diag_service.ingest.members import DumpFile, DumpPath, StackDumps

    dumps = StackDumps(where="dumps")
    for i, (rank, lines) in enumerate(snaps):
        dumps.add(DumpPath("", f"{i // 2:04d}", rank), DumpFile(name=f"{i}/rank-{rank}.txt", data="\n".join(lines).encode()))
    with contextlib.suppress(ValueError):  # documented: no snapshot holds a parseable dump
        analyze_dumps(dumps)
    with tempfile.TemporaryDirectory() as d:
        for i, (rank, lines) in enumerate(snaps):
            body = "\n".join([*heads, f"=== Rank {rank}: http://w{rank} ===", *lines])
            (Path(d) / f"stacks_20261202_15{i:02d}00.txt").write_text(body, errors="replace")
        found, _ = debug_server_dumps(d)
        if found is not None:
            with contextlib.suppress(ValueError):
                analyze_dumps(found)


BUNDLE_FILES = ["rank-0.log", "node1/stderr.log", "dumps/0000/rank-0.txt", "dumps/0001/rank-0.txt", "dumps/0002/rank-1.json",
                "dumps/ranks.json", "dumps/index.json", "timing.jsonl", "fr/nccl_trace_rank_0", "fr/nccl_trace_rank_1",
                ".diagignore", "logs.tar.gz", "a/b/c.log.gz"]


def _content(name: str) -> st.SearchStrategy[bytes]:
    if name.endswith(".jsonl"):
        return st.lists(st.one_of(LAB, _record(FEED_KEYS)), max_size=8).map(
            lambda rs: "\n".join(_dumps(r) for r in _good(4) + rs).encode())
    if "nccl_trace" in name:
        return st.one_of(FR_DOC, JSON_ANY).map(lambda d: _dumps(d).encode())
    if name.endswith((".txt", ".json")):
        return st.one_of(st.lists(st.sampled_from(DUMP_TOKENS), max_size=12).map(lambda ls: "\n".join(ls).encode()),
                         JSON_ANY.map(lambda d: _dumps(d).encode()))
    if name.endswith(".gz"):
        return _lines(10).map(lambda ls: gzip.compress("\n".join(ls).encode("utf-8", "surrogatepass")))
    return _lines(15).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))


@SLOW
@given(st.lists(st.sampled_from(BUNDLE_FILES), min_size=1, max_size=6, unique=True).flatmap(
    lambda names: st.tuples(*(st.tuples(st.just(n), _content(n)) for n in names))))
def test_the_whole_diagnosis_of_a_bundle_folder(files: tuple[tuple[str, bytes], ...]) -> None:
    """Logs, stack dumps, their metadata, a timing feed and Flight Recorder dumps together: every analyzer
    the pipeline runs on a folder, and how their reports are combined."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    with tempfile.TemporaryDirectory() as d:
        for name, data in files:
            p = Path(d) / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        try:
            dg = diagnose(DiagnoseRequest(path=d, kb=False, llm=False))
        except DiagError as exc:
            assert _input_error(exc), exc
            event("input error")
            return
        event(f"diagnosed: hang={dg.hang is not None} slow={dg.slow is not None}")


# --- bundles and uploads: bytes --------------------------------------------------------------------------------


def _containers(data: bytes) -> dict[str, bytes]:
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:gz") as tf:
        info = tarfile.TarInfo("job/rank-0.log")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    zb = io.BytesIO()
    with zipfile.ZipFile(zb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("rank-1.log", data)
    return {"a.log": data, "a.log.gz": gzip.compress(data), "b.log.gz": b"\x1f\x8b" + data, "c.tar.gz": tar.getvalue(),
            "d.tar.gz": tar.getvalue()[: max(1, len(tar.getvalue()) // 2)], "e.zip": zb.getvalue(),
            "f.zip": b"PK\x05\x06" + data, "g.tar": data}


@SLOW
@given(st.one_of(st.binary(max_size=400), _lines(20).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))))
@example(data=b"\x1f\x8b\x08\x00")  # a .log starting with a truncated gzip: EOFError out of tarfile.is_tarfile
def test_bundles_of_arbitrary_bytes(data: bytes) -> None:
    from diag_service.service.settings import UploadLimits
    from diag_service.service.uploads import inspect_bundle

    with tempfile.TemporaryDirectory() as d:
        for name, blob in _containers(data).items():
            p = Path(d) / name
            p.write_bytes(blob)
            rep = InputReport(path=name)
            try:
                for _ in read_bundle(p, rep):
                    pass
            except DiagError as exc:
                assert _input_error(exc), exc
            try:
                inspect_bundle(p, UploadLimits())
            except DiagError as exc:  # the service's Refused: a 4xx
                assert 400 <= exc.status < 500, exc  # type: ignore[attr-defined]


def test_the_strategies_reach_the_parsers() -> None:
    """The fuzzed parsers are not trivially rejecting: a well-formed sample of each parses."""
    assert detect_prefixes(["[rank3]: x", "[rank1]: y"]) == {"rank"}
    assert parse_timestamp("2024-04-10T04:59:03Z boom", 2024) == pytest.approx(1712725143.0)
    assert parse_dump("\n".join([DUMP_TOKENS[0], DUMP_TOKENS[2], DUMP_TOKENS[5], DUMP_TOKENS[6]]))[0].frames
    from diag_service.slow.feeds import jsonl_feed

    assert len(jsonl_feed([_dumps(r) for r in _good(3)], "t").batch) == 12


def test_a_list_or_object_as_node_name_keeps_the_record_without_its_node() -> None:
    # found by the property test above: a lab-format record whose "node" is a list crashed the fast path
    # (unhashable type) instead of being analysed without its node
    from diag_service.slow import SlowDetector

    det = SlowDetector()
    bad = [{**r, "node": ["gpu-node-001"]} for r in _good(6)]
    det.update(bad)
    det.update([{**r, "node": {"name": "x"}, "rank": 1} for r in _good(6)])
    rep = det.report()
    assert rep.input.records == 48  # every record kept (6 steps x 4 ranks, twice)
    assert rep.input.nodes == 0
