"""The Bundle: one classification of a bundle's members and one pass over its bytes, whatever it is packed
as (folder, .tar.gz, .zip). Real lab stack dumps (tests/fixtures/hang) and a real lab timing feed."""

from __future__ import annotations

import builtins
import io
import random
import shutil
import tarfile
from pathlib import Path

import pytest
from bundles import pack_folder

from diag_service.domain import FailureMode
from diag_service.hang import HangRequest, analyze_hang
from diag_service.ingest.members import MemberKind, classify
from diag_service.ingest.open import Bundle, open_bundle
from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures"
HANG = FIX / "hang" / "collective_mismatch"  # culprit rank 3 (tests/test_hang.py)
FEED = FIX / "slow" / "lab_slow_rank_comm" / "timing.jsonl"
LOG = ("2026-11-29 14:10:00,000 INFO [rank0] step 10 loss 2.3\n"
       "[rank1]: RuntimeError: NCCL communicator was aborted on rank 1.\n")


def _job(root: Path) -> Path:
    """A job folder as a collector writes it: logs, dumps/ (with ranks.json and index.json) and a feed."""
    job = root / "job42"
    (job / "logs").mkdir(parents=True)
    (job / "logs" / "rank-0.log").write_text(LOG)
    shutil.copytree(HANG, job / "dumps")
    shutil.copy(FEED, job / "timing.jsonl")
    return job


def _packed(job: Path, tmp: Path) -> dict[str, Path]:
    tgz, zpath = pack_folder(job, tmp)
    return {"dir": job, "tar.gz": tgz, "zip": zpath}


def _hang_view(rep) -> tuple:  # noqa: ANN001 - HangReport
    return (rep.hung, rep.snapshots, rep.ranks, tuple(rep.stuck_ranks), rep.stuck_since,
            tuple((s.rank, s.node, s.score, s.reason) for s in rep.suspects), rep.explanation)


def test_members_are_classified_by_one_rule() -> None:
    assert classify("timing.jsonl") is MemberKind.TIMING_FEED
    assert classify("run7/attempt_0/timing-rank3.jsonl.gz") is MemberKind.TIMING_FEED
    assert classify("timing.csv") is MemberKind.TIMING_FEED and classify("timing.parquet") is MemberKind.TIMING_FEED
    assert classify("run7/dumps/0003/rank-2.txt") is MemberKind.STACK_DUMP
    assert classify("dumps/ranks.json") is MemberKind.DUMP_META
    assert classify("logs/deep/er/0003/rank-2.txt") is MemberKind.LOG  # too deep to be a dumps root
    assert classify("ranks.json") is MemberKind.LOG  # not beside dumps: a log like any other
    assert classify("truth.json", excluded=lambda n: n == "truth.json") is MemberKind.IGNORED


def test_a_stack_dump_bundle_gives_the_same_hang_result_as_folder_tar_gz_and_zip(tmp_path: Path) -> None:
    forms = _packed(_job(tmp_path), tmp_path)
    by_hang = {k: _hang_view(analyze_hang(HangRequest(dumps_dir=str(p)))) for k, p in forms.items()}
    assert by_hang["dir"] == by_hang["tar.gz"] == by_hang["zip"]
    assert by_hang["dir"][0] and by_hang["dir"][5][0][0] == 3  # hung, rank 3 first
    diags = {k: diagnose(DiagnoseRequest(path=str(p))) for k, p in forms.items()}
    views = {k: _hang_view(d.hang) for k, d in diags.items()}
    assert views["dir"] == views["tar.gz"] == views["zip"] == by_hang["dir"]
    for d in diags.values():
        assert d.failure_mode is FailureMode.FAIL_HANG and d.first_failing_rank == 3
        assert d.slow is not None  # the feed was analysed from the same pass
        dumped = d.model_dump_json()
        assert "rank-3.txt:" not in dumped and "ranks.json:" not in dumped  # dumps never reach the log stages
        assert d.input.files == 1  # one log file; dumps and the feed are not logs


def test_an_archive_is_decompressed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _job(tmp_path)
    rng = random.Random(7)
    for i in range(40):  # incompressible log bytes (step lines with random ids), so that a second pass shows
        lines = [f"2026-11-29 14:10:{s % 60:02d},000 INFO [rank{i + 1}] step {s} id {rng.getrandbits(64):016x}\n"
                 for s in range(3000)]
        (job / "logs" / f"rank-{i + 1}.log").write_text("".join(lines))
    tgz = _packed(job, tmp_path)["tar.gz"]
    size = tgz.stat().st_size
    read = {"bytes": 0}
    real_open = builtins.open

    class Counting(io.FileIO):
        def read(self, n: int = -1) -> bytes:
            b = super().read(n)
            read["bytes"] += len(b)
            return b

        def readinto(self, buf) -> int:  # noqa: ANN001 - a writable buffer
            n = super().readinto(buf)
            read["bytes"] += n or 0
            return n

    def counting_open(file, mode="r", *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202 - open's signature
        if str(file) == str(tgz) and "b" in mode and "r" in mode:
            return io.BufferedReader(Counting(str(file), "r"))
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(tarfile, "bltn_open", counting_open)  # tarfile keeps its own reference to open
    d = diagnose(DiagnoseRequest(path=str(tgz)))
    monkeypatch.undo()
    assert d.hang is not None and d.slow is not None
    # one pass over the archive, plus the look for a .diagignore among the first members
    assert size > 1 << 20
    assert read["bytes"] <= size * 1.05 + (64 << 10), (read["bytes"], size)


def test_text_is_a_bundle_without_a_file() -> None:
    b = Bundle.from_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", name="paste.log")
    blocks = list(b.blocks())
    assert len(blocks) == 1 and blocks[0].source.path == "paste.log"
    assert b.report.lines == 1 and b.dumps() is None and b.feeds() == []
    with pytest.raises(RuntimeError):
        list(b.blocks())


def test_a_log_called_rank_0_txt_outside_dumps_stays_a_log(tmp_path: Path) -> None:
    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "rank-0.txt").write_text("[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    b = open_bundle(tmp_path)
    texts = [blk.text for blk in b.blocks()]
    assert any("CUDA out of memory" in t for t in texts) and b.dumps() is None
