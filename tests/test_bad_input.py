"""Hostile and damaged input: every case ends in a clear error or a warning, never a crash.

Each damaged bundle still holds the real failure of ``tests/bundles.py`` where that makes sense,
so the tests also check that the damage costs nothing beyond the damaged part.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import struct
import tarfile
import threading
import zipfile
import zlib
from pathlib import Path

import bundles as B
import pytest
from conftest import run_cli, run_diagnose

from diag_service.domain import Category, Diagnosis, InputReport
from diag_service.ingest import BundleError, IngestLimits, read_bundle
from diag_service.ingest import walk as walk_mod

OOM_MEMBER = B.oom_member()


def assert_oom_found(d: Diagnosis, file: str | None = None, line: int | None = None) -> None:
    assert d.category is Category.GPU_OOM, d.root_cause.summary
    assert d.first_failing_rank == B.OOM_RANK
    if file is not None:
        ev = [e for e in d.root_cause.evidence if e.file == file]
        assert ev, [(e.file, e.line) for e in d.root_cause.evidence]
        assert ev[0].rank == B.OOM_RANK
        if line is not None:
            assert ev[0].line == line


def warnings_about(d: Diagnosis, name: str) -> list[str]:
    return [w for w in d.input.warnings if w.startswith(name)]


def read_all(path: Path, **limits: int) -> tuple[str, InputReport]:
    report = InputReport(path=str(path))
    text = "".join(b.text for b in read_bundle(path, report, IngestLimits(**limits) if limits else None))
    return text, report


# --- nothing to read ------------------------------------------------------------------------------


def test_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with pytest.raises(BundleError, match=r"empty bundle: no readable log lines in .*logs"):
        run_diagnose(tmp_path / "logs")
    res = run_cli("diagnose", str(tmp_path / "logs"))
    assert res.exit_code == 2
    assert "empty bundle" in res.output


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_bytes(b"")
    with pytest.raises(BundleError, match=r"empty bundle: no readable log lines in .*stderr\.log"):
        run_diagnose(tmp_path / "stderr.log")
    res = run_cli("diagnose", str(tmp_path / "stderr.log"), "--json")
    assert res.exit_code == 2
    # no diagnosis: the error itself, as one JSON object on stdout (docs/errors.md) and one line on stderr
    body = json.loads(res.stdout)
    assert set(body) == {"detail", "kind", "exit_code"} and "empty bundle" in body["detail"]
    assert "empty bundle" in res.stderr


def test_a_file_of_blank_lines_is_empty_too(tmp_path: Path) -> None:
    """A log collector that wrote only newlines (a pod's stdout with nothing but blank prints): no log line to
    diagnose, the same input error as an empty file (it was answered unknown, confidence 0.40, exit 0)."""
    (tmp_path / "stdout.log").write_bytes(b"\n\n   \n\t\r\n" * 50)
    with pytest.raises(BundleError, match=r"empty bundle.*stdout\.log: blank \(200 line\(s\) of whitespace only\)"):
        run_diagnose(tmp_path / "stdout.log")
    res = run_cli("diagnose", str(tmp_path / "stdout.log"))
    assert res.exit_code == 2


def test_a_blank_member_beside_a_real_log_is_named(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    (built.path / "node1" / "console.log").write_bytes(b"\n" * 3)
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    assert warnings_about(d, "node1/console.log") == ["node1/console.log: blank (3 line(s) of whitespace only)"]


def test_an_empty_member_of_a_bundle_is_named(tmp_path: Path) -> None:
    """A node's console that came back empty (a collector that ran after the pod was gone): the answer rests
    on the other files, and the report says which one held nothing."""
    built = B.torchrun_logdir(tmp_path)
    (built.path / "node1" / "console.log").write_bytes(b"")
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    assert warnings_about(d, "node1/console.log") == ["node1/console.log: empty (0 bytes)"]


def test_nonexistent_path(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such file or directory"):
        run_diagnose(tmp_path / "nope.tar.gz")
    res = run_cli("diagnose", str(tmp_path / "nope.tar.gz"))
    assert res.exit_code == 2


def test_bundle_of_only_binary_files_names_the_reason(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "core.48213").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(4096))
    with pytest.raises(BundleError, match=r"empty bundle.*core\.48213: binary content, skipped"):
        run_diagnose(tmp_path / "b")


# --- binary and badly encoded members ---------------------------------------------------------------


def test_binary_files_mixed_into_a_bundle_are_skipped(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    node1 = built.path / "node1"
    (node1 / "core.48213").write_bytes(b"\x7fELF\x02\x01\x01\x00" + os.urandom(20000))
    (node1 / "checkpoint_step1200.pt").write_bytes(b"PK\x03\x04\x14\x00\x00\x00" + os.urandom(20000))  # torch.save zip
    (node1 / "loss_curve.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(5000))
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    for name in ("core.48213", "checkpoint_step1200.pt", "loss_curve.png"):
        assert warnings_about(d, f"node1/{name}") == [f"node1/{name}: binary content, skipped"]
    assert d.input.files == len(built.files) + 3
    assert d.input.lines == B.total_lines(built)


def test_invalid_utf8_and_latin1_are_replaced_and_counted(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    target = built.path / OOM_MEMBER
    lines = target.read_bytes().split(b"\n")
    i = built.oom_line - 1
    # a latin-1 line from a German-locale tool, and stray bytes inside the OOM line itself
    lines.insert(0, "Fehler beim Öffnen der Datei /data/gebäude_ß.idx".encode("latin-1"))
    lines[i + 1] = lines[i + 1].replace(b"GPU 1 has", b"GPU 1 \xff\xfe has")
    data = b"\n".join(lines)
    target.write_bytes(data)
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line + 1)
    n_bad = data.decode("utf-8", "replace").count("\ufffd")
    assert n_bad == 5
    assert warnings_about(d, OOM_MEMBER) == [f"{OOM_MEMBER}: {n_bad} byte sequence(s) not valid UTF-8, replaced"]
    assert "GPU 1 \ufffd\ufffd has" in d.model_dump_json()


def test_crlf_line_ends(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    for p in built.path.rglob("*.log"):
        p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    assert d.input.warnings == []
    assert d.input.lines == B.total_lines(built)
    dump = d.model_dump_json()
    assert "\\r" not in dump


def test_ansi_colour_codes_are_removed_and_not_taken_for_binary(tmp_path: Path) -> None:
    """loguru's default coloured format (forced with colorize=True in a batch job): a dozen escape
    sequences per short line, above 10% of the bytes."""
    def loguru(line: str) -> str:
        ts, _, _, _, msg = line.split(" ", 4)
        return (
            f"\x1b[32m{ts} {_[:12]}\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mtrain\x1b[0m:\x1b[36mmain\x1b[0m:"
            f"\x1b[36m88\x1b[0m - \x1b[1m{msg.split(' - ', 1)[-1][:9]}\x1b[0m"
        )

    built = B.torchrun_logdir(tmp_path)
    target = built.path / OOM_MEMBER
    lines = target.read_text().split("\n")
    head = [loguru(x) for x in lines[:5]] * 40  # a coloured start of the file
    red = [f"\x1b[31m{x}\x1b[0m" if "Error" in x else x for x in lines]  # rich-style red exception line
    data = "\n".join(head + red)
    sample = data.encode()[:8192]
    assert sample.count(b"\x1b") > 0.1 * len(sample)
    target.write_text(data)
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line + len(head))
    assert d.input.warnings == []
    assert "\\u001b" not in d.model_dump_json()
    assert not any("[0m" in e.template or "[31m" in e.template for e in d.events)


def test_cr_progress_bars_keep_what_the_terminal_shows(tmp_path: Path) -> None:
    """tqdm redraws its bar with \\r; the OOM hits mid-epoch, so the excepthook's traceback is written
    right after the last bar, on the same line."""
    built = B.torchrun_logdir(tmp_path)
    target = built.path / OOM_MEMBER
    lines = target.read_text().split("\n")
    tb = next(i for i, x in enumerate(lines) if "Traceback" in x)
    bar = "".join(
        f"\rEpoch 3: {p:3d}%|{'#' * (p // 10):<10}| {p * 5}/500 [01:{p % 60:02d}<02:00,  2.6{p % 10}it/s, loss=2.31]"
        for p in range(46)
    )
    done_bar = "".join(f"\rvalidate: {p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:01<00:00, 80.1it/s]" for p in range(101))
    data = "\n".join([*lines[:2], done_bar, *lines[2:tb]]) + "\n" + bar + "\n".join(lines[tb:])
    target.write_text(data)
    assert data.split("\n")[built.oom_line].startswith("[rank5]: torch.OutOfMemoryError")

    text, report = read_all(target)
    shown = text.split("\n")
    assert "\r" not in text
    assert shown[2] == "validate: 100%|##########| 100/100 [00:01<00:00, 80.1it/s]"
    assert shown[tb + 1] == "[rank5]: Traceback (most recent call last):"
    assert report.lines == data.count("\n")

    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line + 1)
    assert not any("Epoch" in e.template or "Traceback (incomplete)" in e.template for e in d.events)


def test_cr_cr_lf_from_a_pty_capture_keeps_the_line(tmp_path: Path) -> None:
    (tmp_path / "out.log").write_bytes(b"step 1\r\r\n[rank5]: torch.OutOfMemoryError: CUDA out of memory.\r\r\n")
    text, _ = read_all(tmp_path / "out.log")
    assert text == "step 1\n[rank5]: torch.OutOfMemoryError: CUDA out of memory.\n"


# --- very long lines ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [5 << 20, 2 << 20], ids=["5MB-across-blocks", "2MB-inside-one-block"])
def test_very_long_line_is_truncated_with_a_marker(tmp_path: Path, size: int) -> None:
    built = B.torchrun_logdir(tmp_path)
    target = built.path / OOM_MEMBER
    # a DataLoader worker dumping a whole tensor on one line, just before the OOM
    long_line = b"RuntimeError: bad batch: tensor([" + b"0.1234, " * (size // 8) + b"])"
    lines = target.read_bytes().split(b"\n")
    lines.insert(3, long_line)
    target.write_bytes(b"\n".join(lines))

    text, report = read_all(target)
    shown = text.split("\n")
    assert shown[3].startswith("RuntimeError: bad batch: tensor([0.1234, ")
    assert shown[3].endswith(" [truncated: line longer than limit]")
    assert len(shown[3]) <= (1 << 20) + 64
    assert len(shown) == len(lines)  # no line lost or added
    assert report.warnings == [f"{OOM_MEMBER.rsplit('/', 1)[-1]}: 1 line(s) longer than {1 << 20} bytes truncated"]

    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line + 1)  # line numbers after the long line stay right
    assert warnings_about(d, OOM_MEMBER) == [f"{OOM_MEMBER}: 1 line(s) longer than {1 << 20} bytes truncated"]
    assert all(len(e.first.text) <= 2000 for e in d.events)


def test_long_line_is_cut_between_utf8_characters(tmp_path: Path) -> None:
    (tmp_path / "out.log").write_bytes("é".encode() * 3000 + b"\nnext line\n")
    text, report = read_all(tmp_path / "out.log", max_line_bytes=1001, block_bytes=4096)
    first, second = text.split("\n")[:2]
    assert first == "é" * 500 + " [truncated: line longer than limit]"
    assert second == "next line"
    assert report.warnings == ["out.log: 1 line(s) longer than 1001 bytes truncated"]  # no "not valid UTF-8"


# --- damaged compression and archives ----------------------------------------------------------------


def test_truncated_tar_gz_keeps_what_precedes_the_cut(tmp_path: Path) -> None:
    files = {f"job_logs/{k}": v for k, v in B.torchrun_logdir_files().items()}
    # a big node-0 stdout last in the archive: the cut lands inside it
    big_name = "job_logs/node0/dataloader_stats.log"
    big = "".join(
        f"{B.YEAR}-03-14 13:0{i % 3}:{i % 60:02d},{i % 1000:03d} - data - INFO - shard {i:06d} read "
        f"{(i * 7919) % 100003} samples in {(i * 31) % 997} ms\n"
        for i in range(20000)
    ).encode()
    full = B.make_tar(tmp_path / "full.tar.gz", {**files, big_name: big}, "w:gz")
    data = full.read_bytes()
    cut = tmp_path / "job_logs.tar.gz"
    cut.write_bytes(data[: int(len(data) * 0.6)])

    d = run_diagnose(cut)
    assert_oom_found(d, "job_logs/" + OOM_MEMBER)
    assert any(w.startswith(big_name) and "truncated" in w for w in d.input.warnings), d.input.warnings
    complete = sum(v.count(b"\n") + (not v.endswith(b"\n")) for v in files.values())
    # part of the cut member was read, not all of it
    assert complete + 1000 < d.input.lines < complete + big.count(b"\n")


def test_a_tar_gz_cut_short_early_has_no_diagignore_warning(tmp_path: Path) -> None:
    # a small bundle cut within its first members: the truncation is reported once, for the member it
    # hit, not also as an unreadable .diagignore the archive never had (from a new user's trial)
    built = B.rank_stderr_file(tmp_path)
    files = {"bundle/rank0.log": built.path.read_bytes(),
             "bundle/rank1.log": "".join(f"step {i} loss {i % 7}.{i % 10}\n" for i in range(3000)).encode()}
    full = B.make_tar(tmp_path / "full.tar.gz", files, "w:gz")
    data = full.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) - 100])
    d = run_diagnose(cut)
    assert any("truncated" in w for w in d.input.warnings), d.input.warnings
    assert not any(w.startswith(".diagignore") for w in d.input.warnings), d.input.warnings


def test_tar_gz_cut_inside_its_first_header_is_a_clear_error(tmp_path: Path) -> None:
    full = B.make_tar(tmp_path / "full.tar.gz", B.torchrun_logdir_files(), "w:gz")
    (tmp_path / "cut.tar.gz").write_bytes(full.read_bytes()[:100])
    with pytest.raises(BundleError, match=r"cannot read archive .*cut\.tar\.gz"):
        run_diagnose(tmp_path / "cut.tar.gz")
    assert run_cli("diagnose", str(tmp_path / "cut.tar.gz")).exit_code == 2


def test_gz_file_that_is_not_gzip_is_read_as_text(tmp_path: Path) -> None:
    built = B.rank_stderr_file(tmp_path)
    p = tmp_path / "stderr.log.gz"
    p.write_bytes(built.path.read_bytes())
    d = run_diagnose(p)
    assert_oom_found(d, "stderr.log.gz", built.oom_line)
    assert d.input.warnings == ["stderr.log.gz: not gzip-compressed despite its name, read as plain text"]


def test_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path: Path) -> None:
    content = B.as_bytes(B.worker_stderr(B.OOM_RANK))
    gz = gzip.compress(content, mtime=0)
    p = tmp_path / "stderr.log.gz"
    p.write_bytes(gz[: len(gz) * 3 // 4])
    text, report = read_all(p)
    assert len(text) > len(content) // 2 and content.decode().startswith(text.rsplit("\n", 2)[0])
    assert len(report.warnings) == 1 and "truncated" in report.warnings[0]
    d = run_diagnose(p)  # never a crash, whatever the cut left
    assert d.input.lines == text.count("\n")


def test_corrupt_gzip_data_is_a_warning(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    gz = bytearray(gzip.compress(b"".join(B.as_bytes(B.worker_stdout(r)) for r in range(8)) * 50, mtime=0))
    gz[40:60] = b"\xff" * 20  # damage the deflate stream
    (built.path / "node0" / "stdout_all.log.gz").write_bytes(bytes(gz))
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    (w,) = warnings_about(d, "node0/stdout_all.log.gz")
    assert "corrupt gzip data" in w


def test_archive_members_with_traversal_paths_are_refused(tmp_path: Path) -> None:
    evil = {
        "../evil.log": b"RuntimeError: EVIL-PARENT\n",
        "/etc/cron.d/evil.log": b"RuntimeError: EVIL-ABSOLUTE\n",
        "job_logs/../../evil2.log": b"RuntimeError: EVIL-NESTED\n",
    }
    files = {**evil, **{f"job_logs/{k}": v for k, v in B.torchrun_logdir_files().items()}}
    for archive in (B.make_tar(tmp_path / "evil.tar.gz", files, "w:gz"), B.make_zip(tmp_path / "evil.zip", files)):
        d = run_diagnose(archive)
        assert_oom_found(d, "job_logs/" + OOM_MEMBER)
        for name in evil:
            assert warnings_about(d, name) == [f"{name}: unsafe path in archive (absolute or '..'), refused"]
        assert "EVIL" not in d.model_dump_json()
    assert not (tmp_path.parent / "evil.log").exists() and not (tmp_path / "evil2.log").exists()


def test_links_in_archives_are_skipped(tmp_path: Path) -> None:
    files = {f"job_logs/{k}": v for k, v in B.torchrun_logdir_files().items()}
    p = tmp_path / "links.tar"
    with tarfile.open(p, "w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, kind, target in [
            ("job_logs/node1/latest.log", tarfile.SYMTYPE, "/etc/passwd"),
            ("job_logs/node1/hard.log", tarfile.LNKTYPE, "/etc/passwd"),
            ("job_logs/node1/fifo.log", tarfile.FIFOTYPE, ""),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tf.addfile(info)
    d = run_diagnose(p)
    assert_oom_found(d, "job_logs/" + OOM_MEMBER)
    for name in ("latest.log", "hard.log", "fifo.log"):
        assert warnings_about(d, f"job_logs/node1/{name}") == [f"job_logs/node1/{name}: link or special file in archive, skipped"]
    assert "root:" not in d.model_dump_json()

    z = tmp_path / "links.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        info = zipfile.ZipInfo("job_logs/node1/latest.log")
        info.external_attr = (0o120777 << 16)  # a symlink, as `zip --symlinks` stores it
        zf.writestr(info, "/etc/passwd")
    d = run_diagnose(z)
    assert_oom_found(d)
    assert warnings_about(d, "job_logs/node1/latest.log") == ["job_logs/node1/latest.log: symbolic link in archive, skipped"]


def test_symlinks_in_a_directory_bundle(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    (tmp_path / "outside.log").write_text("RuntimeError: OUTSIDE-THE-BUNDLE\n")
    (built.path / "node1" / "escape.log").symlink_to(tmp_path / "outside.log")
    (built.path / "node1" / "dangling.log").symlink_to(built.path / "node1" / "gone.log")
    d = run_diagnose(built.path)
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    assert warnings_about(d, "node1/escape.log") == ["node1/escape.log: symbolic link leaving the bundle, skipped"]
    assert warnings_about(d, "node1/dangling.log") == ["node1/dangling.log: broken symbolic link, skipped"]
    assert "OUTSIDE-THE-BUNDLE" not in d.model_dump_json()


# --- decompression bombs -----------------------------------------------------------------------------


def test_zip_bomb_member_is_skipped_without_inflating_it(tmp_path: Path) -> None:
    p = tmp_path / "job_logs.zip"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in B.torchrun_logdir_files().items():
            zf.writestr(name, data)
        with zf.open("node1/zeros.log", "w", force_zip64=True) as w:  # 300 MB of zeros, streamed
            chunk = bytes(1 << 20)
            for _ in range(300):
                w.write(chunk)
    assert p.stat().st_size < 3 << 20
    d = run_diagnose(p)
    assert_oom_found(d, OOM_MEMBER)
    (w,) = warnings_about(d, "node1/zeros.log")
    assert "likely a decompression bomb, skipped" in w
    assert d.input.bytes_read < 1 << 20


def _text_bomb(mb: int) -> bytes:
    """``mb`` MiB of one repeated log line, gzip-compressed in a stream (~1000:1)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    line = b"[rank3]: step 100 | loss 2.0000\n"
    piece = line * ((1 << 20) // len(line))
    return b"".join([*(c.compress(piece) for _ in range(mb)), c.flush()])


def test_tar_gz_bomb_member_is_cut(tmp_path: Path) -> None:
    """A tar header declares the *uncompressed* size, so the ratio must be measured against what the
    member consumes of the compressed archive. (Limits lowered so that little text reaches extract.)"""
    bomb = gzip.decompress(_text_bomb(48))
    p = B.make_tar(tmp_path / "job_logs.tar.gz", {**B.torchrun_logdir_files(), "node1/zz_chatter.log": bomb}, "w:gz")
    assert p.stat().st_size < 1 << 20
    d = run_diagnose(p, ratio_floor_bytes=512 << 10, block_bytes=128 << 10)
    assert_oom_found(d, OOM_MEMBER)
    (w,) = warnings_about(d, "node1/zz_chatter.log")
    assert "likely a decompression bomb, member cut" in w
    assert d.input.bytes_read < 2 << 20
    # a stream cannot skip a member without inflating it: the rest of a hostile archive is dropped
    assert d.input.warnings[-1] == "archive: rest of the archive skipped after a decompression bomb"


def test_gzip_bomb_file_is_cut(tmp_path: Path) -> None:
    p = tmp_path / "chatter.log.gz"
    p.write_bytes(_text_bomb(48))
    text, report = read_all(p, ratio_floor_bytes=4 << 20, max_ratio=50)
    (w,) = report.warnings
    assert w.startswith("chatter.log.gz: decompression ratio above 50x") and w.endswith("member cut")
    assert 4 << 20 < report.bytes_read < 12 << 20
    assert len(text) <= report.bytes_read


def test_a_cut_gzip_bomb_does_not_drop_the_logs_after_it(tmp_path: Path) -> None:
    """A bomb read first (``a_bomb.log.gz`` sorts before the logs) is cut for its own ratio; its bytes must
    not then push the whole folder past the bundle ratio and skip the real logs (a new user's trial: the
    diagnosis turned unknown)."""
    built = B.torchrun_logdir(tmp_path / "job")
    (built.path / "a_bomb.log.gz").write_bytes(_text_bomb(48))
    d = run_diagnose(built.path, ratio_floor_bytes=4 << 20, max_ratio=50)
    assert_oom_found(d, OOM_MEMBER)
    (w,) = warnings_about(d, "a_bomb.log.gz")
    assert "likely a decompression bomb, member cut" in w
    assert not any("bundle decompression ratio" in x for x in d.input.warnings)


def test_bundle_total_limit(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    d = run_diagnose(built.path, max_total_bytes=4000)
    (w,) = d.input.warnings  # said once, and no further file is opened
    assert w.endswith("bundle exceeds 4000 decompressed bytes; rest skipped")
    assert d.input.bytes_read < 4000 + max(len(v) for v in built.files.values())
    assert d.input.files < len(built.files)


# --- nested archives ---------------------------------------------------------------------------------


def test_nested_zip_in_a_directory_and_in_a_tar(tmp_path: Path) -> None:
    files = B.torchrun_logdir_files()
    node1 = {k: v for k, v in files.items() if k.startswith("node1/")}
    rest = {k: v for k, v in files.items() if not k.startswith("node1/")}
    inner = B.make_zip(tmp_path / "node1.zip", node1).read_bytes()

    d_dir = tmp_path / "dir"
    B.write_files(d_dir, {**rest, "node1.zip": inner})
    d = run_diagnose(d_dir)
    assert_oom_found(d, "node1.zip/" + OOM_MEMBER)
    assert d.input.warnings == []

    t = B.make_tar(tmp_path / "outer.tar.gz", {**rest, "node1.zip": inner}, "w:gz")
    d = run_diagnose(t)
    assert_oom_found(d, "node1.zip/" + OOM_MEMBER)
    assert d.input.warnings == []


# --- unreadable members ------------------------------------------------------------------------------


def test_unreadable_file_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = B.torchrun_logdir(tmp_path)
    victim = built.path / f"node0/{B.RUN_ID}/attempt_0/0/stderr.log"
    if os.geteuid() != 0:
        victim.chmod(0)
    else:  # root reads through chmod 000: make the open fail the way it does for other users
        real_open = walk_mod.open_regular

        def guarded_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if Path(file) == victim:
                raise PermissionError(errno.EACCES, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(walk_mod, "open_regular", guarded_open)
    d = run_diagnose(built.path)
    rel = victim.relative_to(built.path).as_posix()
    assert warnings_about(d, rel) == [f"{rel}: unreadable (Permission denied), skipped"]
    assert_oom_found(d, OOM_MEMBER, built.oom_line)
    (w,) = [e for e in d.events if "Watchdog caught" in e.template]
    assert w.ranks == [1, 2, 3]


def test_unreadable_directory_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = B.torchrun_logdir(tmp_path)
    victim = built.path / "node0"
    if os.geteuid() != 0:
        victim.chmod(0)
    else:
        real_scandir = os.scandir

        def guarded_scandir(path="."):  # noqa: ANN001, ANN202
            if Path(path) == victim:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", guarded_scandir)
    try:
        d = run_diagnose(built.path)
    finally:
        victim.chmod(0o755)
    assert warnings_about(d, "node0") == ["node0: unreadable directory (Permission denied), skipped"]
    assert_oom_found(d, OOM_MEMBER, built.oom_line)


def test_encrypted_zip_member_is_a_warning(tmp_path: Path) -> None:
    files = B.torchrun_logdir_files()
    p = B.make_zip(tmp_path / "job_logs.zip", {**files, "node0/secret.log": b"RuntimeError: SEALED\n"})
    data = bytearray(p.read_bytes())
    with zipfile.ZipFile(p) as zf:
        info = zf.getinfo("node0/secret.log")
    # set the "encrypted" flag bit in the member's local header and central-directory entry
    data[info.header_offset + 6] |= 1
    cd = data.index(b"PK\x01\x02")
    while data[cd + 46 : cd + 46 + struct.unpack("<H", data[cd + 28 : cd + 30])[0]] != b"node0/secret.log":
        cd = data.index(b"PK\x01\x02", cd + 4)
    data[cd + 8] |= 1
    p.write_bytes(bytes(data))
    d = run_diagnose(p)
    assert_oom_found(d, OOM_MEMBER)
    (w,) = warnings_about(d, "node0/secret.log")
    assert "unreadable zip member" in w and "encrypted" in w
    assert "SEALED" not in d.model_dump_json()


def test_member_count_limit(tmp_path: Path) -> None:
    built = B.torchrun_logdir(tmp_path)
    d = run_diagnose(built.path, max_members=5)
    assert d.input.warnings == ["more than 5 files, rest skipped"]
    assert d.input.files == 5


# --- streams that cannot be rewound -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tar.gz", "tar", "zip", "text", "gzip-text"])
def test_bundle_from_a_pipe(tmp_path: Path, kind: str) -> None:
    """`tar cz job_logs | diag diagnose /dev/stdin`: a pipe has no name to go by and cannot seek."""
    files = B.torchrun_logdir_files()
    if kind in ("tar.gz", "tar"):
        data = B.make_tar(tmp_path / "x", files, "w:gz" if kind == "tar.gz" else "w").read_bytes()
        oom_file = OOM_MEMBER
    elif kind == "zip":
        data = B.make_zip(tmp_path / "x", files).read_bytes()
        oom_file = OOM_MEMBER
    else:
        data = files[OOM_MEMBER] if kind == "text" else gzip.compress(files[OOM_MEMBER])
        oom_file = "fifo"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as w:
            w.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    d = run_diagnose(fifo)
    writer.join(5)
    assert_oom_found(d, oom_file)
    assert d.input.warnings == []


def test_nested_tar_gz_per_node_in_a_directory(tmp_path: Path) -> None:
    """Logs collected as one tarball per node, next to each other in a folder."""
    files = B.torchrun_logdir_files()
    outer = tmp_path / "collected"
    outer.mkdir()
    for n in range(len(B.NODES)):
        node_files = {k: v for k, v in files.items() if k.startswith(f"node{n}/")}
        B.make_tar(outer / f"node{n}.tar.gz", node_files, "w:gz")
    d = run_diagnose(outer)
    assert_oom_found(d, "node1.tar.gz/" + OOM_MEMBER)
    assert d.input.warnings == []
    (w,) = [e for e in d.events if "Watchdog caught" in e.template]
    assert w.nodes == ["node0"] and w.ranks == [0, 1, 2, 3]


def test_a_file_without_failure_evidence_gets_a_warning_and_no_action(tmp_path: Path) -> None:
    """Not a training log (a host name file) or a healthy attempt's log: no event, so an explicit
    warning and the policy's L0 rule instead of a restart."""
    from diag_service.domain import RecoveryLevel
    from diag_service.pipeline import DiagnoseRequest, diagnose

    # A training log that just stops could be a healthy attempt's or a hung job's: it is a hang to confirm
    # (fail_hang at 0.15), never a restart; text that is no training log at all has no evidence.
    for name, text, rule in (
            ("hostname", "vm\n", "no_failure_evidence"),
            ("healthy.log", "".join(f"[rank0]: step {i} loss {2.5 - i / 100:.3f} lr 3e-4\n" for i in range(50)),
             "hang_unconfirmed")):
        p = tmp_path / name
        p.write_text(text)
        d = diagnose(DiagnoseRequest(path=str(p)))
        assert d.category is Category.UNKNOWN and not d.events
        assert any(w.startswith("no failure evidence") for w in d.input.warnings), d.input.warnings
        assert d.recovery is not None and d.recovery.level is RecoveryLevel.L0
        assert d.recovery.rule_id == rule
    real = diagnose(DiagnoseRequest(path=str(Path(__file__).resolve().parents[1] / "examples" / "torchrun_shape_mismatch_2x2")))
    assert not any(w.startswith("no failure evidence") for w in real.input.warnings)
    assert real.recovery is not None and real.recovery.rule_id != "no_failure_evidence"


def test_a_utf16_log_is_named_as_such_with_its_conversion(tmp_path: Path) -> None:
    """Windows PowerShell's ``>`` writes UTF-16LE with a byte-order mark (a new user's trial: "binary content"):
    the error says what it is and how to convert it."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    p = tmp_path / "train.log"
    p.write_bytes("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\r\n".encode("utf-16"))
    with pytest.raises(BundleError, match=r"UTF-16 text.*iconv -f UTF-16 -t UTF-8"):
        diagnose(DiagnoseRequest(path=str(p)))


def test_an_archive_cut_inside_its_only_stack_dump_is_an_input_error(tmp_path: Path) -> None:
    # a new user's fresh-clone check: the first 300 bytes of a .tar.gz of one node log folder whose first member is a
    # py-spy dump read 0 log lines and an unparseable piece of a dump, and answered fail_stop / unknown (exit 0)
    # (a long command line of varied arguments, so that the cut lands before the dump's first thread)
    args = " ".join(f"--opt{i}={zlib.crc32(str(i).encode()):08x}" for i in range(200))
    dump = (f"Process 1264: python train.py {args}\nPython v3.11.7\n\nThread 1264 (idle): \"MainThread\"\n"
            "    _engine_run_backward (torch/autograd/graph.py:979)\n").encode()
    full = B.make_tar(tmp_path / "full.tar.gz", {"run/dumps/snap1/rank-0.txt": dump,
                                                  "run/dumps/snap1/rank-1.txt": dump}, "w:gz")
    cut = tmp_path / "run.tar.gz"
    cut.write_bytes(full.read_bytes()[:300])
    with pytest.raises(BundleError, match="no readable log lines and no readable stack"):
        run_diagnose(cut)
