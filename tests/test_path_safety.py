"""Issue 19, finding 5: a bundle's files are checked when they are opened, not only when they are listed.

Every reader of a member path (the log pass, ``.diagignore``, stack dumps, dump metadata, timing feeds,
Flight Recorder dumps, the debug server's dump files) refuses a symbolic link leaving the bundle and
anything that is not a regular file (``/dev/zero``, a pipe), also when the file was swapped for one
after the bundle was listed; the refusal is a warning (or a feed error) and nothing is read from it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from diag_service.fsutil import UnsafePathError, open_regular, read_regular
from diag_service.hang import HangRequest, analyze_hang
from diag_service.hang.analyzer import analyze_dumps
from diag_service.hang.flight import analyze_fr_files
from diag_service.ingest.members import find_fr_folder
from diag_service.ingest.open import open_bundle
from diag_service.slow import FeedError, load_feed
from diag_service.slow.analyze import analyze_feeds

FIX = Path(__file__).parent / "fixtures"
OOM_LOG = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/workspace/train.py", line 88, in <module>\n'
    "[rank0]:     loss.backward()\n"
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)


def _feed_lines(ranks: int = 4, steps: int = 40) -> str:
    return "".join(
        json.dumps({"rank": r, "node": f"node{r // 2}", "step": s, "start": 1000.0 + s, "end": 1000.9 + s,
                    "compute_s": 0.6, "comm_s": 0.2, "data_s": 0.05}) + "\n"
        for s in range(steps) for r in range(ranks)
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the bundle, holding what a link may try to reach."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "patterns").write_text("*.log\n")
    (d / "timing.jsonl").write_text(_feed_lines())
    return d


def _swap_for_link(path: Path, target: str | Path) -> None:
    path.unlink()
    path.symlink_to(target)


def test_open_regular_refuses_links_devices_and_pipes(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "b"
    root.mkdir()
    (root / "ok.log").write_text("fine\n")
    (root / "inner.log").symlink_to(root / "ok.log")
    (root / "escape.log").symlink_to(outside / "patterns")
    (root / "zero.log").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe.log")
    assert read_regular(root / "ok.log", 100, root) == b"fine\n"
    assert read_regular(root / "inner.log", 100, root) == b"fine\n"  # a link within the bundle is followed
    for name in ("escape.log", "zero.log", "pipe.log"):
        with pytest.raises(UnsafePathError):
            open_regular(root / name, root)
    for name in ("inner.log", "zero.log", "pipe.log"):  # without a root no link is followed
        with pytest.raises(UnsafePathError):
            open_regular(root / name)


def test_a_diagignore_linked_from_outside_the_bundle_is_not_applied(tmp_path: Path, outside: Path) -> None:
    bundle = tmp_path / "job"
    bundle.mkdir()
    (bundle / "rank-0.log").write_text(OOM_LOG)
    (bundle / ".diagignore").symlink_to(outside / "patterns")  # "*.log": would hide every log
    b = open_bundle(bundle)
    text = "".join(blk.text for blk in b.blocks())
    assert "OutOfMemoryError" in text
    assert any(w.startswith(".diagignore: unreadable") and "leaving" in w for w in b.report.warnings)


def test_diag_slow_on_a_folder_does_not_follow_its_feed_out_of_it(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "timing.jsonl").symlink_to(outside / "timing.jsonl")
    with pytest.raises(FeedError, match="leaving"):
        load_feed(run)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["timing.jsonl", "timing.json", "timing.csv"])
def test_a_feed_that_is_a_device_or_a_pipe_is_refused_unread(tmp_path: Path, name: str) -> None:
    zero = tmp_path / name
    zero.symlink_to("/dev/zero")  # read_bytes() or a line iterator on it would fill the memory
    with pytest.raises(FeedError, match="not a regular file"):
        load_feed(zero)
    pipe = tmp_path / "p" / name
    pipe.parent.mkdir()
    os.mkfifo(pipe)  # opening it for reading would wait for a writer forever
    with pytest.raises(FeedError, match="not a regular file"):
        load_feed(pipe)


def test_a_feed_line_without_end_is_skipped_in_pieces(tmp_path: Path) -> None:
    feed = tmp_path / "timing.jsonl"
    feed.write_text(_feed_lines() + "x" * (3 << 20) + "\n" + _feed_lines(steps=2).replace('"step": 0', '"step": 90'))
    f = load_feed(feed)
    assert f.stats.bad_records == 1 and len(f.batch) == 4 * 42


def test_a_feed_swapped_for_a_link_after_listing_is_not_read(tmp_path: Path, outside: Path) -> None:
    bundle = tmp_path / "job"
    bundle.mkdir()
    (bundle / "rank-0.log").write_text(OOM_LOG)
    (bundle / "timing.jsonl").write_text(_feed_lines(steps=2))
    b = open_bundle(bundle)
    list(b.blocks())
    (feed,) = b.feeds()
    _swap_for_link(bundle / "timing.jsonl", outside / "timing.jsonl")
    with pytest.raises(FeedError, match="leaving"):
        analyze_feeds([feed])


@pytest.mark.timeout(60)
def test_stack_dumps_swapped_after_listing_are_refused(tmp_path: Path, outside: Path) -> None:
    bundle = tmp_path / "job"
    shutil.copytree(FIX / "hang" / "sleep_before_allreduce", bundle / "dumps")
    b = open_bundle(bundle)
    list(b.blocks())
    dumps = b.dumps()
    assert dumps is not None
    snaps = sorted(p for p in (bundle / "dumps").iterdir() if p.is_dir())
    shutil.copy(snaps[-1] / "rank-0.json", outside / "rank-0.json")
    # the culprit's dumps (the JSON form is read first): one now a link to a dump outside, one
    # /dev/zero, one a pipe
    _swap_for_link(snaps[-1] / "rank-2.json", outside / "rank-0.json")
    _swap_for_link(snaps[-2] / "rank-2.json", "/dev/zero")
    (snaps[-3] / "rank-2.json").unlink()
    os.mkfifo(snaps[-3] / "rank-2.json")
    rep = analyze_dumps(dumps)
    refused = [w for w in rep.warnings if "rank-2.json" in w]
    assert len(refused) == 3, rep.warnings
    assert sum("leaving" in w for w in refused) == 2 and sum("not a regular file" in w for w in refused) == 1


def test_a_flight_recorder_dump_swapped_for_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "fr"
    shutil.copytree(FIX / "flight_recorder" / "missing_tp", folder)
    found = find_fr_folder(folder)
    assert found is not None and sorted(found.files) == [0, 1, 2, 3]
    shutil.copy(folder / "nccl_trace_rank_1", outside / "nccl_trace_rank_0")
    _swap_for_link(folder / "nccl_trace_rank_0", outside / "nccl_trace_rank_0")
    _swap_for_link(folder / "nccl_trace_rank_1", "/dev/zero")  # read_bytes() here filled the memory
    rep = analyze_fr_files(found.files, found.warnings)
    assert rep is not None
    assert rep.ranks_missing_dump == [0, 1]
    assert sum("symbolic link, not followed" in w for w in rep.warnings) == 2


@pytest.mark.timeout(60)
def test_a_debug_server_dump_file_that_is_a_pipe_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "dump_dir"
    shutil.copytree(FIX / "debug_server", folder)
    last = sorted(folder.glob("stacks_*.txt"))[-1]
    last.unlink()
    os.mkfifo(last)  # open() without O_NONBLOCK waited here for a writer
    rep = analyze_hang(HangRequest(dumps_dir=str(folder)))
    assert any(last.name in w and "not a regular file" in w for w in rep.warnings)
    assert rep.snapshots == 4


@pytest.mark.timeout(120)
def test_a_bundle_of_links_out_devices_and_pipes_is_diagnosed_without_reading_them(tmp_path: Path, outside: Path) -> None:
    """Every kind of member, each a link to a secret outside, to /dev/zero, or a pipe: the diagnosis of the
    real log completes, each is named in a warning, and nothing of the secret reaches the result."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    secret = outside / "secret.log"
    secret.write_text("RuntimeError: NCCL error: OUTSIDE-SECRET-7f3a\n")
    bundle = tmp_path / "job"
    (bundle / "dumps" / "0000").mkdir(parents=True)
    (bundle / "fr").mkdir()
    (bundle / "rank-0.log").write_text(OOM_LOG)
    links = {"escape.log": secret, "zero.log": "/dev/zero", "timing.jsonl": "/dev/zero",
             "dumps/0000/rank-0.txt": secret, "dumps/ranks.json": "/dev/zero", "fr/nccl_trace_rank_0": "/dev/zero"}
    for name, target in links.items():
        (bundle / name).symlink_to(target)
    os.mkfifo(bundle / "rank-1.log")
    os.mkfifo(bundle / "dumps" / "0000" / "rank-1.txt")
    d = diagnose(DiagnoseRequest(path=str(bundle), kb=False, llm=False))
    assert d.root_cause is not None and "OutOfMemoryError" in d.model_dump_json()
    assert "OUTSIDE-SECRET" not in d.model_dump_json()
    warned = " ".join(d.input.warnings)
    for name in ("escape.log", "zero.log", "timing.jsonl", "dumps/0000/rank-0.txt", "dumps/ranks.json"):
        assert name in warned, (name, d.input.warnings)


def test_a_pipe_in_a_bundle_folder_is_named_not_silently_skipped(tmp_path: Path) -> None:
    # a new user's trial: a FIFO among the logs was skipped without a word (an archive's says "special file")
    bundle = tmp_path / "job"
    bundle.mkdir()
    (bundle / "rank-0.log").write_text(OOM_LOG)
    os.mkfifo(bundle / "y.log")
    b = open_bundle(bundle)
    assert "OutOfMemoryError" in "".join(blk.text for blk in b.blocks())
    assert "y.log: not a regular file (a pipe, device or socket), skipped" in b.report.warnings
