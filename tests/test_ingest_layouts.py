"""One real multi-rank failure written out in every bundle layout launchers produce.

The failure (``tests/bundles.py``): 2 nodes x 4 GPUs; rank 5 (node 1, local rank 1) dies of a CUDA
OOM; node 1's torchrun agent SIGTERMs ranks 4, 6, 7 and reports rank 5 as the "Root Cause (first
observed failure)"; ranks 0-3 on node 0 hit the ProcessGroupNCCL watchdog timeout 600 s later,
abort, and node 0's agent reports rank 0 as *its* first failure. In every layout the diagnosis
must say gpu_oom on rank 5, point at the exact OOM line of the right file, and attribute the
watchdog cascade to ranks 0-3 (and their node where the layout names nodes).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import bundles as B
import pytest
from conftest import run_diagnose

from diag_service.domain import Category, Diagnosis, EventKind, EventRole, FailureMode, InputReport
from diag_service.ingest import read_bundle

Builder = Callable[[Path], B.Built]

# (builder, prefix/layout tags the input report must list)
LAYOUTS: dict[str, tuple[Builder, set[str]]] = {
    "torchrun-logdir": (B.torchrun_logdir, {"torchrun_logdir", "prefix:rank"}),
    "torchrun-logdir-gzip-members": (lambda t: B.torchrun_logdir(t, gzip_members=True), {"torchrun_logdir"}),
    "combined-rankN-prefix": (B.combined_rank_file, {"prefix:rank"}),
    "combined-defaultN-prefix": (B.combined_default_file, {"prefix:role", "prefix:rank"}),
    "slurm-srun-l": (B.srun_file, {"prefix:srun", "prefix:rank"}),
    "pdsh-deepspeed-host-prefix": (B.pdsh_file, {"prefix:host", "prefix:rank"}),
    "one-file-per-pod": (B.per_pod_dir, {"per_node_file", "prefix:rank"}),
    "one-file-per-pod-gzip": (lambda t: B.per_pod_dir(t, gz=True), {"per_node_file", "prefix:rank"}),
    "one-file-per-pod-kubectl-timestamps": (
        lambda t: B.per_pod_dir(t, timestamps=True), {"per_node_file", "prefix:stamp", "prefix:rank"}
    ),
    "tar": (lambda t: B.archived_logdir(t, "tar"), {"torchrun_logdir"}),
    "tar.gz": (lambda t: B.archived_logdir(t, "tar.gz"), {"torchrun_logdir"}),
    "zip": (lambda t: B.archived_logdir(t, "zip"), {"torchrun_logdir"}),
    "single-file": (B.rank_stderr_file, {"prefix:rank"}),
}



_CACHE: dict[str, tuple[B.Built, Diagnosis]] = {}


def _build(name: str, tmp_path: Path) -> tuple[B.Built, Diagnosis]:
    """Build layout ``name`` and diagnose it, once per test session (tests only read the result)."""
    if name not in _CACHE:
        build, _ = LAYOUTS[name]
        built = build(tmp_path)
        _CACHE[name] = (built, run_diagnose(built.path))
    return _CACHE[name]


def _oom_evidence(built: B.Built, d: Diagnosis):
    hits = [e for e in d.root_cause.evidence if e.file == built.oom_file]
    assert hits, f"no evidence from {built.oom_file}: {[(e.file, e.line) for e in d.root_cause.evidence]}"
    return hits[0]


def _oom_event(d: Diagnosis):
    evs = [e for e in d.events if e.kind is EventKind.TRACEBACK and e.template.startswith("torch.OutOfMemoryError")]
    assert len(evs) == 1, [(e.kind, e.template[:60]) for e in d.events]
    return evs[0]


def _watchdog_event(d: Diagnosis):
    return [e for e in d.events if "Watchdog caught collective operation timeout" in e.template]


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_diagnosis_names_rank_file_and_line(tmp_path: Path, name: str) -> None:
    built, d = _build(name, tmp_path)
    assert d.category is Category.GPU_OOM, d.root_cause.summary
    assert d.failure_mode is FailureMode.FAIL_STOP
    assert d.first_failing_rank == B.OOM_RANK, d.root_cause.summary

    ev = _oom_evidence(built, d)
    assert ev.line == built.oom_line
    assert ev.rank == B.OOM_RANK
    assert ev.text.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    # The (file, line) pair really leads to that line, as `sed -n {line}p` on the member would show.
    assert ev.text[:200] in B.line_at(built, ev.file, ev.line)
    # Nothing of the cascade (ranks 0-4, 6, 7) is offered as root-cause evidence.
    assert {e.rank for e in d.root_cause.evidence} <= {B.OOM_RANK, None}

    oom = _oom_event(d)
    assert oom.ranks == [B.OOM_RANK] and oom.role is EventRole.ROOT and oom.count == 1

    watchdog = _watchdog_event(d)
    if name == "single-file":
        assert watchdog == []
    else:
        assert len(watchdog) == 1
        assert watchdog[0].ranks == list(B.WATCHDOG_RANKS) and watchdog[0].count == len(B.WATCHDOG_RANKS)
        assert watchdog[0].role is EventRole.SYMPTOM


@pytest.mark.parametrize(
    "name", list(LAYOUTS)
)
def test_layout_attributes_nodes(tmp_path: Path, name: str) -> None:
    built, d = _build(name, tmp_path)
    assert _oom_evidence(built, d).node == built.oom_node
    assert _oom_event(d).nodes == ([built.oom_node] if built.oom_node else [])
    for w in _watchdog_event(d):
        assert w.nodes == built.watchdog_nodes
    assert d.faulty_nodes == []  # a GPU OOM is the job's memory budget, not a bad node


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_input_report(tmp_path: Path, name: str) -> None:
    built, d = _build(name, tmp_path)
    _, tags = LAYOUTS[name]
    assert tags <= set(d.input.layouts), d.input.layouts
    assert d.input.warnings == []
    assert d.input.files == len(built.files)
    assert d.input.lines == B.total_lines(built)
    assert d.input.bytes_read == sum(len(B.member_bytes(built, n)) for n in built.files)


def test_evidence_file_of_a_gzip_member_keeps_its_gz_name(tmp_path: Path) -> None:
    built, d = _build("one-file-per-pod-gzip", tmp_path)
    assert built.oom_file == "pytorchjob-worker-1.log.gz"
    assert _oom_evidence(built, d).file == "pytorchjob-worker-1.log.gz"
    assert {e.first.file for e in d.events} <= set(built.files)


def test_gzipped_torchelastic_error_json_is_still_read_as_one(tmp_path: Path) -> None:
    """`gzip -r logs/` turns error.json into error.json.gz: it must still be parsed as torchelastic's
    error file (one traceback event with its exact time), not as a one-line text log."""
    built, d = _build("torchrun-logdir-gzip-members", tmp_path)
    from_error_file = [e for e in d.events if e.first.file.rsplit("/", 1)[-1].startswith("error.json")]
    assert len(from_error_file) == 1
    ev = from_error_file[0].first
    assert ev.text.startswith("OutOfMemoryError: CUDA out of memory")
    assert ev.timestamp == f"{B.YEAR}-03-14T13:02:47.000+00:00"
    assert not any("{" in e.first.text[:3] for e in d.events)


def test_gzipped_error_json_evidence_names_the_real_member(tmp_path: Path) -> None:
    built, d = _build("torchrun-logdir-gzip-members", tmp_path)
    names = {e.first.file for e in d.events}
    assert names <= set(built.files), names - set(built.files)


def test_srun_prefix_found_after_a_long_unlabelled_preamble(tmp_path: Path) -> None:
    """The sbatch script prints ~440 lines (nvidia-smi, pip list) before `srun -l` output begins."""
    built = B.srun_file(tmp_path)
    assert built.oom_line > 400
    d = run_diagnose(built.path)
    assert "prefix:srun" in d.input.layouts
    # Python logging lines carry no [rankN]: prefix; only the srun label says who wrote them.
    assert d.input.ranks_seen >= 5
    assert _oom_evidence(built, d).rank == B.OOM_RANK


def test_rank_prefix_on_a_minority_of_lines_is_still_read(tmp_path: Path) -> None:
    """In a plain torchrun console only tracebacks and C++ lines carry [rankN]: (the excepthook in
    torch.distributed and c10 logging); most lines are the script's own unprefixed logging."""
    built = B.combined_rank_file(tmp_path)
    text = built.files[built.oom_file].decode()
    lines = [x for x in text.split("\n") if x]
    assert sum(x.startswith("[rank") for x in lines) < 0.5 * len(lines)
    report = InputReport(path=str(built.path))
    blocks = list(read_bundle(built.path, report))
    assert "rank" in blocks[0].source.prefixes


def test_blocks_are_streamed_in_bounded_pieces(tmp_path: Path) -> None:
    """A file bigger than one block arrives as several blocks of whole lines, numbered on."""
    built = B.combined_rank_file(tmp_path)
    data = built.files[built.oom_file] * 80  # ~1.2 MB
    big = tmp_path / "big.log"
    big.write_bytes(data)
    report = InputReport(path=str(big))
    from diag_service.ingest import IngestLimits

    blocks = list(read_bundle(big, report, IngestLimits(block_bytes=64 << 10)))
    assert len(blocks) >= len(data) // (64 << 10) > 10
    assert all(b.text.endswith("\n") for b in blocks)
    assert max(len(b.text) for b in blocks) <= (64 << 10) + (1 << 20)
    expect = 1
    for b in blocks:
        assert b.first_line == expect
        expect += b.text.count("\n")
    assert "".join(b.text for b in blocks) == data.decode()
    assert report.lines == data.count(b"\n")


def test_timestamps_of_each_format_are_read(tmp_path: Path) -> None:
    built, d = _build("combined-rankN-prefix", tmp_path)
    w = _watchdog_event(d)[0]
    # glog header [E0314 13:12:48.402...] (no year: the current one), rank 0 first
    assert w.first_timestamp == f"{B.YEAR}-03-14T13:12:48.402+00:00"
    elastic = [e for e in d.events if e.kind is EventKind.ELASTIC_SUMMARY and 5 in e.ranks]
    # torchelastic "time : YYYY-MM-DD_HH:MM:SS"
    assert elastic and elastic[0].first_timestamp == f"{B.YEAR}-03-14T13:02:47.000+00:00"


@pytest.mark.parametrize("name", ["torchrun-logdir", "single-file"])
def test_traceback_in_a_per_process_file_gets_the_time_of_the_line_before(tmp_path: Path, name: str) -> None:
    built, d = _build(name, tmp_path)
    assert _oom_evidence(built, d).timestamp == f"{B.YEAR}-03-14T13:02:46.600+00:00"


def test_kubectl_stamp_gives_the_time_of_a_traceback(tmp_path: Path) -> None:
    built, d = _build("one-file-per-pod-kubectl-timestamps", tmp_path)
    ev = _oom_evidence(built, d)
    stamp = B.line_at(built, ev.file, ev.line).split(" ", 1)[0]  # 2026-03-14T13:02:46.604000001Z
    assert ev.timestamp == stamp[:23] + "+00:00"


def test_earliest_of_several_agents_root_causes_names_the_rank(tmp_path: Path) -> None:
    """Console of torch < 2.2 (no [rankN]: on tracebacks): only the agents' reports name ranks."""
    built = B.combined_rank_file(tmp_path, rank_prefix=False)
    d = run_diagnose(built.path)
    assert d.category is Category.GPU_OOM
    assert d.first_failing_rank == B.OOM_RANK


def test_glog_lines_take_the_year_of_the_logs(tmp_path: Path) -> None:
    year = B.YEAR - 1
    lines = [
        f"{year}-12-31 23:59:50,120 - train - INFO - step 880 | loss 2.0114",
        "[rank3]:[E1231 23:59:58.118000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.",
    ]
    (tmp_path / "out.log").write_text("\n".join(lines) + "\n")
    d = run_diagnose(tmp_path / "out.log")
    (w,) = _watchdog_event(d)
    assert w.first_timestamp == f"{year}-12-31T23:59:58.118+00:00"


def test_glog_lines_above_the_first_dated_line_take_its_year(tmp_path: Path) -> None:
    """A watchdog line printed before any dated line, and dates behind writer prefixes (``[rank0]:[2023-...]``,
    as DeepSpeed's and accelerate's loggers print them): the glog line is read in the logs' year, not today's
    (which put it years after every dated event of the job)."""
    year = B.YEAR - 2
    lines = [
        "[rank3]:[E1231 23:59:58.118000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.",
        f"[rank0]:[{year}-12-31 23:59:59,120] [INFO] [engine.py:88:step] step 880 | loss 2.0114",
    ]
    (tmp_path / "out.log").write_text("\n".join(lines) + "\n")
    d = run_diagnose(tmp_path / "out.log")
    (w,) = _watchdog_event(d)
    assert w.first_timestamp == f"{year}-12-31T23:59:58.118+00:00"
    assert not any("events span" in x for x in d.input.warnings)


def test_a_date_inside_a_message_does_not_set_the_year(tmp_path: Path) -> None:
    lines = [
        "[rank3]:[E1231 23:59:58.118000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.",
        "loading checkpoint /ckpt/run-2019-01-01 00:00:00/model.pt",
    ]
    (tmp_path / "out.log").write_text("\n".join(lines) + "\n")
    (w,) = _watchdog_event(run_diagnose(tmp_path / "out.log"))
    # the yearless line in this year, unless that is still ahead (then the year before: no log comes from the future)
    now = dt.datetime.now(dt.UTC)
    year = now.year if dt.datetime(now.year, 12, 31, 23, 59, 58, tzinfo=dt.UTC) <= now + dt.timedelta(days=2) \
        else now.year - 1
    assert w.first_timestamp == f"{year}-12-31T23:59:58.118+00:00"


def test_builder_matches_torchelastic_format(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The ChildFailedError report in the bundles is what torch itself prints (same failures)."""
    errors = pytest.importorskip("torch.distributed.elastic.multiprocessing.errors")
    import socket
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        monkeypatch.setattr(socket, "getfqdn", lambda *a: B.NODES[1])
        failures = {}
        for f in B.node_failures(1):
            if isinstance(f.message, dict):
                ej = tmp_path / "error.json"
                ej.write_text(json.dumps({"message": f.message}))
                pf = errors.ProcessFailure(local_rank=f.local_rank, pid=f.pid, exitcode=f.exitcode, error_file=str(ej))
                pf.error_file = f.error_file
            else:
                pf = errors.ProcessFailure(local_rank=f.local_rank, pid=f.pid, exitcode=f.exitcode, error_file="/nonexistent")
                pf.timestamp = f.timestamp
            failures[f.rank] = pf
        real = str(errors.ChildFailedError("train.py", failures))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert real == B.child_failed_report("train.py", B.node_failures(1))
    assert "Root Cause (first observed failure):" in real and "rank      : 5 (local_rank: 1)" in real


# --- the line-format library directly -------------------------------------------------------------


@pytest.mark.parametrize(
    "line, kinds, rank, local_rank, node, task, text",
    [
        ("[rank5]: Traceback (most recent call last):", set(), 5, None, None, None, "Traceback (most recent call last):"),
        ("[rank12]:[E314 13:12:48.4 PG.cpp:632] x", set(), 12, None, None, None, "[E314 13:12:48.4 PG.cpp:632] x"),
        ("[default3]:[rank7]: RuntimeError: x", set(), 7, 3, None, None, "RuntimeError: x"),
        ("1: [default1]:[rank5]: RuntimeError: x", {"srun"}, 5, 1, None, 1, "RuntimeError: x"),
        ("  5: [rank5]: RuntimeError: x", {"srun"}, 5, None, None, 5, "RuntimeError: x"),
        ("gpu-node-002: [rank5]: RuntimeError: x", {"host"}, 5, None, "gpu-node-002", None, "RuntimeError: x"),
        ("2026-03-14T13:02:46.604000001Z [rank5]: RuntimeError: x", {"stamp"}, 5, None, None, None, "RuntimeError: x"),
        # no prefix kind detected: a word before a colon is not a host, a number not a task
        ("RuntimeError: CUDA error: out of memory", set(), None, None, None, None, "RuntimeError: CUDA error: out of memory"),
        ("0: person 0.91", set(), None, None, None, None, "0: person 0.91"),
        # in-line markers when no prefix says who
        ("[E314 13:12:48.4 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught", set(), 3, None, None, None, None),
        ("gpu-node-001:48213:48301 [2] NCCL WARN NET/IB : Got completion with error", set(), None, 2, "gpu-node-001", None, None),
        # a script's own "[rankN] " at the start of its line (no colon: not torchrun's prefix, kept in the text)
        ("[rank2] step 86 loss 1.04 step_time 179.4", set(), 2, None, None, None, "[rank2] step 86 loss 1.04 step_time 179.4"),
        ("epoch 3 [rank2] step 86", set(), None, None, None, None, None),
    ],
)
def test_attribute(line: str, kinds: set[str], rank, local_rank, node, task, text) -> None:  # noqa: ANN001
    from diag_service.logformat import attribute

    att = attribute(line, frozenset(kinds))
    assert (att.rank, att.local_rank, att.node, att.task) == (rank, local_rank, node, task)
    if text is not None:
        assert att.text == text


def test_detect_prefixes_needs_many_lines_for_ambiguous_kinds() -> None:
    from diag_service.logformat import detect_prefixes

    config_dump = [f"lr-schedule-{i}: cosine" for i in range(3)] + [f"step {i} loss 2.0" for i in range(40)]
    assert detect_prefixes(config_dump) == frozenset()
    srun = [f"{i % 8}: step {i}" for i in range(40)]
    assert detect_prefixes(srun) == frozenset({"srun"})
    mostly_plain = ["step 1"] * 99 + ["[rank5]: Traceback (most recent call last):"]
    assert detect_prefixes(mostly_plain) == frozenset({"rank"})


@pytest.mark.parametrize(
    "text, iso",
    [
        ("2024-04-10 04:59:03,123 - train - INFO - x", "2024-04-10T04:59:03.123+00:00"),
        ("[2024-04-10 04:59:03,123] [ERROR] [launch.py:325:sigkill_handler] x", "2024-04-10T04:59:03.123+00:00"),
        ("2024-04-10T06:59:03.123+02:00 x", "2024-04-10T04:59:03.123+00:00"),
        ("2024-04-10T04:59:03.123456789Z x", "2024-04-10T04:59:03.123+00:00"),
        ("[rank3]:[E0410 04:59:03.123456789 ProcessGroupNCCL.cpp:632] x", "2023-04-10T04:59:03.123+00:00"),
        ("Apr 10 04:59:03 gpu-node-001 kernel: NVRM: Xid (PCI:0000:18:00): 79", "2023-04-10T04:59:03.000+00:00"),
        ("[Wed Apr 10 04:59:03 2024] NVRM: Xid (PCI:0000:18:00): 79, pid=4821", "2024-04-10T04:59:03.000+00:00"),
        ("step 1200 loss 2.31", None),
        ("2024-13-45 99:99:99 nonsense", None),
    ],
)
def test_parse_timestamp(text: str, iso: str | None) -> None:
    from diag_service.logformat import iso as to_iso
    from diag_service.logformat import parse_timestamp

    assert to_iso(parse_timestamp(text, default_year=2023)) == iso


def test_dmesg_lines_keep_their_year(tmp_path: Path) -> None:
    node = tmp_path / "logs" / "gpu-node-002"
    node.mkdir(parents=True)
    (node / "dmesg.log").write_text(
        "[Wed Apr 10 04:59:01 2024] NVRM: GPU at PCI:0000:18:00: GPU-5b1d0f6e-8c3a-4f1e-9a7b-2d6c0e4f8a91\n"
        "[Wed Apr 10 04:59:03 2024] NVRM: Xid (PCI:0000:18:00): 79, pid=48213, name=python3, "
        "GPU has fallen off the bus.\n"
    )
    d = run_diagnose(tmp_path / "logs")
    assert d.category is Category.GPU_HARDWARE
    (ev,) = [e for e in d.root_cause.evidence if "Xid" in e.text]
    assert (ev.file, ev.line, ev.node, ev.timestamp) == (
        "gpu-node-002/dmesg.log", 2, "gpu-node-002", "2024-04-10T04:59:03.000+00:00"
    )


@pytest.mark.parametrize("doc", ['{"message": ' + "[" * 100_000 + "}", '{"message": {"message": "x", "extraInfo": '
                                 '{"timestamp": ' + "9" * 5000 + "}}}"], ids=["deep nesting", "huge number"])
def test_an_error_json_that_json_cannot_read_is_skipped_not_a_crash(tmp_path: Path, doc: str) -> None:
    src = Path(__file__).parent / "fixtures" / "lab_sigkill_silent_rank"
    clean = run_diagnose(src)
    run = tmp_path / "run"
    shutil.copytree(src, run)
    (run / "attempt_0" / "3").mkdir(parents=True)
    (run / "attempt_0" / "3" / "error.json").write_text(doc)  # where torchrun's error file lands
    d = run_diagnose(run)
    assert (d.failure_mode, d.category, d.first_failing_rank, d.root_cause) == (
        clean.failure_mode, clean.category, clean.first_failing_rank, clean.root_cause)
    assert not any(e.first.file.endswith("error.json") for e in d.events)
