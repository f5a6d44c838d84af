"""One walker of bundles (issue 17): the service's admission check and ingest walk an archive with the
same :class:`~diag_service.ingest.walk.Walker`, under one limits model, and differ only in the policy
(refuse a 4xx / salvage with a warning) documented in :mod:`diag_service.ingest.walk`."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from diag_service.domain import InputReport
from diag_service.ingest import walk as walk_mod
from diag_service.ingest.bundle import read_bundle
from diag_service.limits import BundleLimits
from diag_service.service.settings import UploadLimits
from diag_service.service.uploads import Refused, inspect_bundle

LOG = b"[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: NCCL error: unhandled system error\n"
RANK1 = b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
#: the service's limits, the ratio floor scaled down to keep the archives small
SERVICE = UploadLimits(max_members=50, max_unpacked_bytes=48 << 20, max_ratio=50, ratio_floor_bytes=1 << 20)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _read(path: Path, limits: BundleLimits) -> tuple[str, InputReport]:
    report = InputReport(path=str(path))
    return "".join(b.text for b in read_bundle(path, report, limits)), report


def test_the_service_ingest_reads_the_nested_zip_its_admission_inspected(tmp_path: Path) -> None:
    """Admission opened a zip inside an uploaded tar.gz (its ``max_nesting`` 1 counted levels inside the
    upload) while the ingest of the same diagnosis, given ``max_nesting`` 1, counted the tar.gz itself and
    skipped the zip as binary content: a node's logs zipped in the job's archive were never read."""
    up = _tar_gz(tmp_path / "job.tar.gz", {"job/train.log": LOG, "job/node1.zip": _zip({"rank-1.log": RANK1})})
    info = inspect_bundle(up, SERVICE)
    assert info.members == 3
    text, report = _read(up, SERVICE.ingest_limits())
    assert "CUDA out of memory" in text and not report.warnings, report.warnings


def test_an_archive_nested_deeper_than_the_limit_is_named_not_read_as_binary(tmp_path: Path) -> None:
    inner = _zip({"rank-1.log": RANK1})
    up = _tar_gz(tmp_path / "job.tar.gz", {"job/train.log": LOG, "job/node1.zip": _zip({"inner.zip": inner})})
    text, report = _read(up, BundleLimits())
    assert "RuntimeError" in text and "CUDA out of memory" not in text
    assert report.warnings == ["job/node1.zip/inner.zip: archive nested deeper than 1 level(s), not opened"]
    text, report = _read(up, BundleLimits(max_nesting=2))
    assert "CUDA out of memory" in text and not report.warnings


def test_admission_decompresses_a_gzip_member_without_a_gz_name_as_ingest_does(tmp_path: Path) -> None:
    """A gzip stream named ``rank-3.log`` is decompressed by ingest; admission scanned its compressed
    bytes and admitted an 8 MiB bomb that ingest then had to cut."""
    up = _tar_gz(tmp_path / "job.tar.gz", {"train.log": LOG, "rank-3.log": gzip.compress(b"\n" * (8 << 20))})
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, SERVICE)
    assert exc.value.status == 413 and exc.value.reason == "bomb" and "rank-3.log" in exc.value.message
    _, report = _read(up, SERVICE.ingest_limits())
    assert any(w.startswith("rank-3.log: decompression ratio above 50x") for w in report.warnings), report.warnings


def test_admission_and_ingest_walk_the_same_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, list[str]] = {}
    real = walk_mod.Walker.member

    def member(self, name, fobj, compressed, level):  # noqa: ANN001, ANN202
        seen.setdefault(self.policy, []).append(name)
        return real(self, name, fobj, compressed, level)

    monkeypatch.setattr(walk_mod.Walker, "member", member)
    up = _tar_gz(tmp_path / "job.tar.gz", {"job/train.log": LOG, "job/rank-2.log.gz": gzip.compress(RANK1),
                                           "job/node1.zip": _zip({"rank-1.log": RANK1, "logs/r.txt": LOG})})
    inspect_bundle(up, SERVICE)
    _read(up, SERVICE.ingest_limits())
    assert seen["refuse"] == seen["salvage"] == [
        "job/train.log", "job/rank-2.log.gz", "job/node1.zip", "job/node1.zip/rank-1.log", "job/node1.zip/logs/r.txt"]


@pytest.mark.parametrize(("members", "status", "reason", "warning"), [
    ({"../x.log": LOG}, 422, "traversal", "../x.log: unsafe path in archive (absolute or '..'), refused"),
    ({"big.log.gz": gzip.compress(b"\n" * (4 << 20))}, 413, "bomb", "big.log.gz: decompression ratio above 50x"),
    ({"cut.log.gz": gzip.compress(LOG * 4000)[:-200]}, 422, "bad_gzip", "cut.log.gz: read error after"),
    ({"node.zip": b"PK\x03\x04" + b"\xff" * 64}, 422, "bad_archive", "node.zip: unreadable zip archive"),
], ids=["traversal", "bomb", "truncated-gzip-member", "corrupt-nested-zip"])
def test_one_policy_table_refuses_at_admission_and_salvages_in_ingest(
        tmp_path: Path, members: dict[str, bytes], status: int, reason: str, warning: str) -> None:
    up = _tar_gz(tmp_path / "job.tar.gz", {"train.log": LOG, **members})
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, SERVICE)
    assert (exc.value.status, exc.value.reason) == (status, reason), exc.value.message
    text, report = _read(up, SERVICE.ingest_limits())
    assert "RuntimeError: NCCL error" in text  # the good member is read
    assert any(w.startswith(warning) for w in report.warnings), report.warnings


def _three_member_tar() -> tuple[bytes, list[int]]:
    """An uncompressed tar of three logs and the offsets of their headers."""
    buf = io.BytesIO()
    offsets = []
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i, data in enumerate((LOG, RANK1 * 40, LOG * 40)):
            offsets.append(buf.tell())
            info = tarfile.TarInfo(f"job/rank-{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue(), offsets


@pytest.mark.parametrize("damage", ["bad_header", "cut_at_member"])
def test_a_tar_that_stops_before_its_end_is_not_taken_for_a_whole_one(tmp_path: Path, damage: str) -> None:
    """tarfile ends the member list without a word at a header it cannot parse (after the first member)
    and at the end of the data: ingest read two of three logs with no warning, and admission admitted it."""
    data, offsets = _three_member_tar()
    if damage == "bad_header":
        blob = bytearray(data)
        blob[offsets[2]: offsets[2] + 512] = b"\x7f" * 512  # the third member's header is garbage
        up, expected = tmp_path / "job.tar", "archive: archive ends at a damaged member header; rest skipped"
        up.write_bytes(bytes(blob))
    else:
        up, expected = tmp_path / "job.tar", "archive: archive ends without its end-of-archive blocks (truncated); rest skipped"
        up.write_bytes(data[: offsets[2]])
    text, report = _read(up, BundleLimits())
    assert "CUDA out of memory" in text  # what came before the damage is read
    assert report.warnings == [expected]
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, SERVICE)
    assert (exc.value.status, exc.value.reason) == (422, "bad_archive") and "invalid tar archive" in exc.value.message
    whole = tmp_path / "whole.tar"
    whole.write_bytes(data)
    assert _read(whole, BundleLimits())[1].warnings == [] and inspect_bundle(whole, SERVICE).members == 3
