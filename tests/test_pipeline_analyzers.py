"""diag diagnose folds the hang and slow analyzers in when a bundle carries dumps or a timing feed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from diag_service.cli import app
from diag_service.domain import FailureMode
from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures"


def test_timing_feed_in_a_bundle_makes_a_fail_slow_diagnosis(tmp_path: Path) -> None:
    src = FIX / "slow" / "lab_slow_rank_compute"
    truth = json.loads((src / "truth.json").read_text())
    bundle = tmp_path / "run"
    bundle.mkdir()
    shutil.copy(src / "timing.jsonl", bundle / "timing.jsonl")
    (bundle / "console_node0.log").write_text("2026-11-29 09:39:00,000 INFO [rank0] step 1 loss 2.3\n")
    d = diagnose(DiagnoseRequest(path=str(bundle)))
    assert d.failure_mode is FailureMode.FAIL_SLOW
    assert d.first_failing_rank == truth["faulty_rank"]
    assert d.faulty_nodes == [truth["faulty_node"]]
    assert d.slow is not None and d.slow.stragglers[0].kind.value == "compute"
    assert d.category_source == "analyzers"  # the timing feed decided it, not a signature
    assert d.recovery is not None and d.recovery.timing == "next_checkpoint"
    # the feed went to the slow analyzer, not to the log stages
    assert all(e.first.file != "timing.jsonl" for e in d.events)


def test_excluded_files_are_never_read(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    (tmp_path / "truth.json").write_text('{"category": "network", "error": "NCCL WARN NET/IB : Got completion with error 12"}\n')
    d = diagnose(DiagnoseRequest(path=str(tmp_path), exclude=["truth.json"]))
    assert d.category.value == "gpu_oom"
    assert "truth.json" not in d.model_dump_json()
    res = CliRunner().invoke(app, ["diagnose", str(tmp_path), "--json", "--exclude", "*.json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["category"] == "gpu_oom"


def test_a_bundle_directory_can_list_its_non_log_files_in_diagignore(tmp_path: Path) -> None:
    """The lab writes ``.diagignore`` (its ground truth); any collector may. Same effect as ``--exclude``."""
    (tmp_path / "job.log").write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    (tmp_path / "truth.json").write_text('{"category": "network", "error": "NCCL WARN NET/IB : Got completion with error 12"}\n')
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "runner.txt").write_text("ERROR runner: NCCL timeout injected on rank 3\n")
    (tmp_path / ".diagignore").write_text("# not logs\ntruth.json\n\nnotes/*\n")
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.category.value == "gpu_oom"
    dumped = d.model_dump_json()
    assert "truth.json" not in dumped and "runner.txt" not in dumped and ".diagignore" not in dumped
    assert d.input.files == 1 and d.input.lines == 1  # skipped files are not even opened
    (tmp_path / ".diagignore").unlink()  # without it, the same folder's truth file is read as a log
    assert "truth.json" in diagnose(DiagnoseRequest(path=str(tmp_path))).model_dump_json()



def test_archived_run_gets_the_slow_analysis_and_honours_its_diagignore(tmp_path: Path) -> None:
    from bundles import pack_folder

    src = FIX / "slow" / "lab_slow_rank_comm"
    truth = json.loads((src / "truth.json").read_text())
    run = tmp_path / "run7"
    (run / "logs").mkdir(parents=True)
    shutil.copy(src / "timing.jsonl", run / "timing.jsonl")
    shutil.copy(src / "truth.json", run / "truth.json")  # says "failure_mode": "fail_slow": must not be read
    (run / "logs" / "rank-0.log").write_text("2026-11-29 14:10:00,000 INFO [rank0] step 10 loss 2.3\n")
    (run / "notes").mkdir()
    (run / "notes" / "x.txt").write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    (run / ".diagignore").write_text("truth.json\nnotes/*\n")
    for bundle in pack_folder(run, tmp_path):  # the folder in a tar.gz, its contents at a zip's top
        d = diagnose(DiagnoseRequest(path=str(bundle)))
        assert d.failure_mode is FailureMode.FAIL_SLOW, bundle
        assert d.first_failing_rank == truth["faulty_rank"] and d.category.value == "network"
        dumped = d.model_dump_json()
        assert "truth.json" not in dumped and "x.txt" not in dumped and "timing.jsonl:" not in dumped


def test_a_damaged_feed_in_a_bundle_is_analysed_and_its_problems_are_named(tmp_path: Path) -> None:
    src = FIX / "slow" / "lab_slow_rank_comm"
    truth = json.loads((src / "truth.json").read_text())
    lines = (src / "timing.jsonl").read_text().splitlines()
    lines[10] = lines[10][:25]  # truncated
    lines[20] = "\x00\x01\x02 garbage"
    (tmp_path / "timing.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "rank-0.log").write_text("2026-11-29 14:10:00,000 INFO [rank0] step 10 loss 2.3\n")
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert d.failure_mode is FailureMode.FAIL_SLOW and d.first_failing_rank == truth["faulty_rank"]
    assert any(w.startswith("timing feed: 2 line(s) are not valid JSON") for w in d.input.warnings), d.input.warnings
    assert not any("binary" in w for w in d.input.warnings)  # the feed is not a log: ingest never opens it
    assert d.input.files == 1


def test_the_slow_report_in_a_diagnosis_is_typed_and_reads_back_from_stored_json(tmp_path: Path) -> None:
    """Diagnosis.slow is a SlowReport; its JSON (without the detector's config) is the shape stored by
    schema 1.0, so a diagnosis stored before the bump still reads back."""
    from diag_service.domain import Diagnosis
    from diag_service.slow import SlowReport

    src = FIX / "slow" / "lab_slow_rank_comm"
    shutil.copy(src / "timing.jsonl", tmp_path / "timing.jsonl")
    (tmp_path / "rank-0.log").write_text("2026-11-29 14:10:00,000 INFO [rank0] step 10 loss 2.3\n")
    d = diagnose(DiagnoseRequest(path=str(tmp_path)))
    assert isinstance(d.slow, SlowReport) and d.slow.stragglers
    doc = json.loads(d.model_dump_json())
    assert "config" not in doc["slow"] and doc["slow"]["stragglers"][0]["rank"] == d.slow.stragglers[0].rank
    doc["schema_version"] = "1.0"
    back = Diagnosis.model_validate(doc)
    assert back.slow is not None and back.slow.stragglers == d.slow.stragglers and back.slow.summary == d.slow.summary


@pytest.mark.parametrize(("after_s", "category"), [(60.0, "user_code"), (-60.0, "infrastructure")])
def test_a_kill_after_the_ranks_were_stuck_is_teardown_not_cause(tmp_path: Path, after_s: float, category: str) -> None:
    # Real py-spy dumps of a hung lab run (rank 2 slept before an all-reduce) and torchrun's agent told to stop
    # from outside. Stamped after the first stuck snapshot, the signal is someone killing the hung job; stamped
    # before the hang, it is what stopped the job. After it, the stacks decide: rank 2 asleep in the script.
    import datetime as dt

    src = Path(__file__).parent / "fixtures" / "hang" / "sleep_before_allreduce"
    bundle = tmp_path / "bundle"
    shutil.copytree(src, bundle / "dumps")
    first = min(e["time"] for e in json.loads((src / "index.json").read_text()))
    t = dt.datetime.fromtimestamp(first + after_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S,000")
    (bundle / "console_node0.log").write_text(
        f"[{t}] torch.distributed.elastic.agent.server.api: [WARNING] Received 15 death signal, shutting down workers\n")
    d = diagnose(DiagnoseRequest(path=str(bundle)))
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value == category
    if after_s > 0:
        assert d.first_failing_rank == 2
        assert any("teardown" in f for f in d.findings)
