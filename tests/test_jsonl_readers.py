"""Every JSONL reader of the package goes through :mod:`diag_service.jsonl` and survives the lines that
crashed the hand-written copies: a line of 100,000 nested brackets (``RecursionError`` in ``json.loads``)
and a number of 5,000 digits (``ValueError``: over Python's 4,300-digit integer conversion limit). Each
reader is driven through its public entry point, on real fixtures with the bad lines added."""

from __future__ import annotations

import gzip
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from diag_service.etpr import EtprInputError, compute_ledger, load_events
from diag_service.slow import FeedError, analyze_bundle, analyze_slow
from diag_service.slow.feeds import jsonl_feed

FIX = Path(__file__).parent / "fixtures"
LAB_RUN = FIX / "etpr" / "lab_stop_sigkill_restart"
SLOW_RUN = FIX / "slow" / "lab_slow_rank_compute"

DEEP = b"[" * 100_000
HUGE_NUMBER = b'{"event": "first_step", "time": ' + b"9" * 5000 + b"}"
BAD_LINES = {"deep nesting": DEEP, "huge number": HUGE_NUMBER}


def _with_bad_line(good: bytes, bad: bytes, after: int = 2) -> bytes:
    """``good`` (JSONL) with ``bad`` inserted as line ``after + 1``."""
    lines = good.splitlines(keepends=True)
    return b"".join(lines[:after]) + bad + b"\n" + b"".join(lines[after:])


def _issue(issues: list, code: str):  # noqa: ANN202 - an Issue or None
    return next((i for i in issues if i.code == code), None)


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
@pytest.mark.parametrize("name", ["events.jsonl", "events.jsonl.gz"])
def test_events_source_skips_the_line_and_keeps_the_others(tmp_path: Path, bad: bytes, name: str) -> None:
    # the lab's events as an events file of one job (the ``events`` source: polars first, then line by line)
    rows = [dict(json.loads(line), job="job-7") for line in (LAB_RUN / "events.jsonl").read_text().splitlines()]
    good = "".join(json.dumps(r) + "\n" for r in rows).encode()
    clean, clean_issues = load_events(_write(tmp_path / "clean" / name, good))
    events, issues = load_events(_write(tmp_path / name, _with_bad_line(good, bad)))
    assert events.drop("seq").equals(clean.drop("seq"))
    malformed = _issue(issues, "malformed_json")
    assert malformed is not None and (malformed.count, malformed.examples) == (1, ["line 3"])
    assert _issue(clean_issues, "malformed_json") is None
    assert compute_ledger(events).jobs.height == 1


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_lab_source_skips_the_line_in_events_and_timing(tmp_path: Path, bad: bytes) -> None:
    run = tmp_path / LAB_RUN.name
    shutil.copytree(LAB_RUN, run)
    for f in ("events.jsonl", "timing.jsonl"):
        (run / f).write_bytes(_with_bad_line((LAB_RUN / f).read_bytes(), bad))
    clean, _ = load_events(LAB_RUN)
    events, issues = load_events(run)
    assert events.equals(clean)
    malformed = [(i.count, i.examples) for i in issues if i.code == "malformed_json"]  # one warning per file
    assert sorted(malformed) == [(1, ["events.jsonl:3"]), (1, ["timing.jsonl:3"])]


def _write(path: Path, body: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body) if path.name.endswith(".gz") else body)
    return path


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
@pytest.mark.parametrize("name", ["timing.jsonl", "timing.jsonl.gz"])
def test_slow_feed_file_counts_the_line_and_gives_the_same_report(tmp_path: Path, bad: bytes, name: str) -> None:
    good = (SLOW_RUN / "timing.jsonl").read_bytes()
    clean = analyze_slow(SLOW_RUN / "timing.jsonl")
    rep = analyze_slow(_write(tmp_path / name, _with_bad_line(good, bad, after=10)))
    assert rep.stragglers == clean.stragglers and rep.job_slowdown == clean.job_slowdown
    assert (rep.input.records, rep.input.bad_records) == (clean.input.records, 1)
    assert "1 line(s) are not valid JSON and were skipped" in rep.input.warnings


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_slow_feed_member_of_an_archive_counts_the_line(tmp_path: Path, bad: bytes) -> None:
    job = tmp_path / "job"
    shutil.copytree(SLOW_RUN, job)
    (job / "timing.jsonl").write_bytes(_with_bad_line((SLOW_RUN / "timing.jsonl").read_bytes(), bad, after=10))
    with tarfile.open(tmp_path / "bundle.tar.gz", "w:gz") as t:
        t.add(job, arcname="job")
    clean = analyze_slow(SLOW_RUN)
    # the bundle's feed member read in the log pass (slow.logs) and as a feed member (slow.analyze)
    for rep in (analyze_slow(tmp_path / "bundle.tar.gz"), analyze_bundle(tmp_path / "bundle.tar.gz")):
        assert rep is not None
        assert rep.stragglers == clean.stragglers and rep.job_slowdown == clean.job_slowdown
        assert (rep.input.records, rep.input.bad_records) == (clean.input.records, 1)


def test_feed_lines_keep_non_objects_as_rejected_records_in_file_order() -> None:
    lines = [json.dumps({"rank": 0, "step": 1, "start": 1.0, "end": 2.0}), "[1, 2]", DEEP.decode(), "7",
             HUGE_NUMBER.decode(), json.dumps({"rank": 0, "step": 2, "start": 2.0, "end": 3.0})]
    feed = jsonl_feed(lines, "timing.jsonl", first_line=11)
    assert len(feed.batch) == 2 and list(feed.batch.line) == [11, 16]
    assert feed.stats.bad_records == 4
    assert "2 line(s) are not valid JSON and were skipped" in feed.stats.warnings
    assert any("line 12: not an object; line 14: not an object" in w for w in feed.stats.warnings)


# ---- whole-document JSON inputs beside the JSONL ones: the same two lines make the file unreadable, an
# input error naming the file, not a crash

WHOLE_DOCS = {"deep nesting": "[" * 100_000, "huge number": '[{"step": ' + "9" * 5000 + "}]"}


@pytest.mark.parametrize("doc", WHOLE_DOCS.values(), ids=WHOLE_DOCS.keys())
@pytest.mark.parametrize(("source", "name", "message"), [
    ("philly", "cluster_job_log", "not a Philly cluster_job_log JSON"),
    ("stepfun", "fault_trace.json", "not the StepFun fault_trace.json")])
def test_etpr_trace_documents_that_json_cannot_read_are_input_errors(tmp_path: Path, doc: str, source: str,
                                                                    name: str, message: str) -> None:
    (tmp_path / name).write_text(doc)
    with pytest.raises(EtprInputError, match=message):
        load_events(tmp_path / name, source=source)


@pytest.mark.parametrize("doc", WHOLE_DOCS.values(), ids=WHOLE_DOCS.keys())
def test_a_json_array_feed_that_json_cannot_read_is_a_feed_error(tmp_path: Path, doc: str) -> None:
    (tmp_path / "timing.json").write_text(doc)
    with pytest.raises(FeedError, match="not valid JSON"):
        analyze_slow(tmp_path / "timing.json")
