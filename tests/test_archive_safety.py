"""Issue 19, finding 6: nested archives count against the same budget, a zip's member count is checked
before its directory is parsed, and the bomb ratio is measured on bytes actually read.

The archives are built here in a temporary folder: a tar.gz holding a zip of many members each under
the ratio floor (it made a worker read 252 MB from a 3 KB upload), a .log.gz bomb inside a tar, and a
zip of hundreds of thousands of folder entries (127 MB in the API process before it was refused).
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

import diag_service.ingest.bundle as bundle_mod
import diag_service.service.uploads as uploads_mod
from diag_service.domain import InputReport
from diag_service.ingest import BundleError, IngestLimits
from diag_service.ingest.bundle import read_bundle
from diag_service.service.settings import UploadLimits
from diag_service.service.uploads import Refused, extract_bundle, inspect_bundle

LOG = b"[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: NCCL error: unhandled system error\n"
#: The service's limits, scaled down (floor 1 MiB instead of 16 MiB) to keep the archives small.
LIMITS = UploadLimits(max_members=50, max_unpacked_bytes=48 << 20, max_ratio=50, ratio_floor_bytes=1 << 20)


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=9) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _nested_bomb(tmp_path: Path) -> Path:
    """A tar.gz of a few hundred bytes holding a zip of 16 logs of 0.9 MiB of newlines each: every member
    is under the 1 MiB floor, so no member's own ratio is ever checked; 14 MiB from ~500 bytes."""
    inner = _zip_bytes({"a.log": LOG, **{f"logs/rank-{i}.log": b"\n" * (900 << 10) for i in range(16)}})
    return _tar_gz(tmp_path / "job.tar.gz", {"job/inner.zip": inner})


def _read(path: Path, limits: IngestLimits) -> tuple[int, InputReport]:
    rep = InputReport(path=str(path))
    n = sum(len(b.text) for b in read_bundle(path, rep, limits))
    return n, rep


def test_admission_inspects_a_nested_zip_and_refuses_the_bomb(tmp_path: Path) -> None:
    up = _nested_bomb(tmp_path)
    assert up.stat().st_size < 4096
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, LIMITS)
    assert exc.value.status == 413 and exc.value.reason == "bomb"
    assert "inner.zip/logs/rank-" in exc.value.message and "decompression ratio above 50x" in exc.value.message


def test_the_unpacked_upload_is_cut_by_ingest_at_the_bundle_ratio(tmp_path: Path) -> None:
    """A hang upload is unpacked to a folder, whose nested zip ingest opens: the worker stops after
    about the floor's worth of bytes, not the whole 14 MiB (the bundle's ratio counts bytes read from disk)."""
    folder = tmp_path / "unpacked"
    with tarfile.open(_nested_bomb(tmp_path)) as tf:
        tf.extractall(folder, filter="data")
    n, rep = _read(folder, LIMITS.ingest_limits())
    assert n < 3 << 20
    assert any("bundle decompression ratio above 50x" in w for w in rep.warnings), rep.warnings


def test_a_nested_archive_within_the_ratio_is_read_whole(tmp_path: Path) -> None:
    """Ordinary nesting (a node's logs zipped inside the job's tar.gz, compressing ~5x) is admitted,
    counted in the same budget, and read whole."""
    lines = b"".join(b"[rank%d]: step %d loss %.4f lr 3e-4 tokens/s %d\n" % (i % 8, i, 1 / (i + 1), 40_000 + i * 7 % 991)
                     for i in range(60_000))
    node1 = _zip_bytes({"rank-1.log": lines})
    up = _tar_gz(tmp_path / "ok.tar.gz", {"job/train.log": LOG, "job/node1.zip": node1})
    info = inspect_bundle(up, LIMITS)
    # the zip is unpacked to be read (random access), so its own bytes count too
    assert info.members == 3 and info.unpacked_bytes == len(LOG) + len(node1) + len(lines)
    n, rep = _read(up, IngestLimits(max_ratio=50, ratio_floor_bytes=1 << 20))
    assert not rep.warnings and n == len(LOG) + len(lines)


def test_admission_inspects_a_gzip_member_as_ingest_reads_it(tmp_path: Path) -> None:
    up = _tar_gz(tmp_path / "job.tar.gz", {"train.log": LOG, "rank-3.log.gz": gzip.compress(b"\0" * (8 << 20))})
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, LIMITS)
    assert exc.value.reason == "bomb" and "rank-3.log.gz" in exc.value.message


def _many_folders_zip(path: Path, n: int, declare: int | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("train.log", LOG)
        for i in range(n):
            zf.writestr(zipfile.ZipInfo(f"d{i}/"), b"")
    if declare is not None:  # the end record lies about the count: the directory's size still tells
        data = bytearray(path.read_bytes())
        at = data.rfind(b"PK\x05\x06")
        struct.pack_into("<HH", data, at + 8, declare, declare)
        path.write_bytes(bytes(data))
    return path


def _no_zipfile(*_a: object, **_k: object) -> None:
    raise AssertionError("the zip's directory was parsed before its member count was checked")


def test_a_zip_of_many_folder_entries_is_refused_before_its_directory_is_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from diag_service.ingest.archive import zip_directory

    up = _many_folders_zip(tmp_path / "dirs.zip", 5_000)
    assert zip_directory(up.open("rb")) == (5_001, pytest.approx(5_000 * 52, rel=0.1))
    monkeypatch.setattr(uploads_mod.zipfile, "ZipFile", _no_zipfile)
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, LIMITS)
    assert exc.value.status == 413 and "more than 50 members (5001 in its directory)" in exc.value.message


def test_ingest_refuses_a_zip_with_too_many_members_before_parsing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    up = _many_folders_zip(tmp_path / "dirs.zip", 5_000)
    monkeypatch.setattr(bundle_mod.zipfile, "ZipFile", _no_zipfile)
    with pytest.raises(BundleError, match="more than 50 members"):
        _read(up, IngestLimits(max_members=50))


def test_a_zip_whose_end_record_understates_its_members_is_refused_by_size(tmp_path: Path) -> None:
    up = _many_folders_zip(tmp_path / "liar.zip", 30_000, declare=3)
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, LIMITS)
    assert exc.value.status == 413 and "zip directory of" in exc.value.message


def test_extract_of_an_admitted_upload_keeps_working(tmp_path: Path) -> None:
    up = _tar_gz(tmp_path / "job.tar.gz", {"job/train.log": LOG, "job/inner.zip": _zip_bytes({"rank-1.log": LOG})})
    out = extract_bundle(up, tmp_path / "out", LIMITS)
    assert sorted(p.name for p in out.iterdir()) == ["inner.zip", "train.log"]


def test_nested_archives_share_one_member_count(tmp_path: Path) -> None:
    """Each archive inside a folder counted its members from zero: 10,000 zips of 200,000 entries each
    passed a 200,000 limit. Files and members of every archive are one count for the bundle."""
    folder = tmp_path / "job"
    folder.mkdir()
    for z in range(3):
        (folder / f"node{z}.zip").write_bytes(_zip_bytes({f"rank-{z * 4 + r}.log": LOG for r in range(4)}))
    n, rep = _read(folder, IngestLimits(max_members=8))
    # node0.zip and its 4 entries, node1.zip: 6 of 8; node1.zip's 4 entries do not fit, nor node2.zip's
    assert n == 4 * len(LOG)
    assert [w.split(" (")[0] for w in rep.warnings] == ["node1.zip: unreadable zip archive",
                                                        "node2.zip: unreadable zip archive"]
    assert "6 of the bundle's 8 already met" in rep.warnings[0]
    n, rep = _read(folder, IngestLimits(max_members=15))
    assert n == 12 * len(LOG) and not rep.warnings


def test_a_zip64_record_is_what_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zipfile takes the zip64 end record's count and directory size when a locator precedes the 32-bit
    record, whatever the 32-bit record says: a 32-bit record claiming 3 entries does not let 70,000 in."""
    up = tmp_path / "z64.zip"
    with zipfile.ZipFile(up, "w") as zf:
        for i in range(70_000):
            zf.writestr(zipfile.ZipInfo(f"d{i}/"), b"")
    data = bytearray(up.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HHL", data, at + 8, 3, 3, 300)  # entries on disk, entries, directory size
    up.write_bytes(bytes(data))
    monkeypatch.setattr(uploads_mod.zipfile, "ZipFile", _no_zipfile)
    with pytest.raises(Refused) as exc:
        inspect_bundle(up, LIMITS)
    assert exc.value.status == 413 and "(70000 in its directory)" in exc.value.message


def test_the_diagignore_look_checks_a_zips_directory_before_parsing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The look for a ``.diagignore`` before the walk is held to the walk's member limit too: the zip's
    directory is not parsed, and the walk then refuses the zip as before."""
    from diag_service.ingest.open import open_bundle

    up = _many_folders_zip(tmp_path / "dirs.zip", 5_000)
    monkeypatch.setattr(zipfile, "ZipFile", _no_zipfile)
    b = open_bundle(up, IngestLimits(max_members=50))
    assert not any(w.startswith(".diagignore") for w in b.report.warnings)
    with pytest.raises(BundleError, match="more than 50 members"):
        list(b.blocks())


def test_the_diagignore_look_inflates_a_tar_no_further_than_the_ratio_floor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reaching a member of a streamed tar means inflating every member before it; the look for a
    ``.diagignore`` stops at a member that ends past the ratio floor instead of reading through it (a
    bomb placed first would be inflated whole): here it reads the archive's head, not its 8 MiB."""
    import builtins
    import random

    from diag_service.ingest.archive import archive_member_text

    big = random.Random(3).randbytes(8 << 20)  # incompressible: bytes read from disk = bytes inflated
    tgz = _tar_gz(tmp_path / "job.tar.gz", {"job/big.log": big, "job/.diagignore": b"truth.json\n", "job/truth.json": b"{}"})
    late = _tar_gz(tmp_path / "late.tar.gz", {"job/.diagignore": b"truth.json\n", "job/big.log": big})
    read = {"bytes": 0}
    real_open = builtins.open

    class Counting(io.FileIO):
        def readinto(self, buf) -> int:  # noqa: ANN001 - a writable buffer
            n = super().readinto(buf)
            read["bytes"] += n or 0
            return n

    def counting_open(file, mode="r", *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202 - open's signature
        if str(file) == str(tgz) and "b" in mode:
            return io.BufferedReader(Counting(str(file), "r"))
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(tarfile, "bltn_open", counting_open)
    assert archive_member_text(tgz, ".diagignore", IngestLimits(ratio_floor_bytes=1 << 20)) is None
    monkeypatch.undo()
    assert tgz.stat().st_size > 8 << 20 and read["bytes"] < 1 << 20, read
    # written first, as collectors do, it is found (and the default floor, 64 MiB, reaches past big.log too)
    found = ("job/.diagignore", "truth.json\n")
    assert archive_member_text(late, ".diagignore", IngestLimits(ratio_floor_bytes=1 << 20)) == found
    assert archive_member_text(tgz, ".diagignore") == found
