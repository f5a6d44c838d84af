"""Issue 19, finding 3: sizes that input states about itself are bounded where the input is parsed
(:data:`diag_service.limits.LIMITS`), and a sparse rank id costs memory for one rank, not for every id below it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

import diag_service.slow.feeds as feeds_mod
from diag_service.hang import HangRequest, parse_dump
from diag_service.hang.analyzer import analyze_dumps
from diag_service.hang.dumps import DumpError
from diag_service.ingest.members import DumpFile, DumpPath, StackDumps, dump_member
from diag_service.limits import LIMITS, InputLimits
from diag_service.slow import FeedError, SlowDetector, analyze_slow

FIX = Path(__file__).parent / "fixtures" / "hang"
ROOT = Path(__file__).resolve().parents[1]


def _records(ranks: list[int], steps: int, first: int = 0) -> list[dict[str, object]]:
    return [{"rank": r, "node": f"node{r % 4}", "step": s, "start": 100.0 + s, "end": 100.8 + s,
             "compute_s": 0.5, "comm_s": 0.2, "data_s": 0.05} for s in range(first, first + steps) for r in ranks]


def test_a_sparse_rank_id_costs_one_rank_of_memory() -> None:
    """Rank 1,000,000 beside ranks 0-3 made the detector allocate a table of 1,000,001 entries (8 MB)."""
    det = SlowDetector()
    det.update(_records([0, 1, 2, 3], 5))
    tracemalloc.start()
    try:
        det.update(_records([0, 1, 2, 3, LIMITS.max_rank - 1], 1, first=5))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    rep = det.report()
    assert rep.input.ranks == 5 and rep.input.bad_records == 0


@pytest.mark.parametrize("world", [0, LIMITS.max_world_size + 1, 10**12])
def test_a_world_size_out_of_bounds_is_an_input_error(world: int) -> None:
    with pytest.raises(FeedError, match="world size"):
        SlowDetector(world_size=world)
    with pytest.raises(ValidationError):
        HangRequest(dumps_dir=".", world_size=world)


def test_diag_slow_with_an_absurd_world_size_exits_2(tmp_path: Path) -> None:
    feed = tmp_path / "timing.jsonl"
    feed.write_text("".join(json.dumps(r) + "\n" for r in _records([0, 1], 20)))
    proc = subprocess.run([sys.executable, "-m", "diag_service.cli", "slow", str(feed), "--world-size", str(10**12)],
                          capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "world size" in proc.stderr + proc.stdout


def test_node_names_beyond_the_bound_are_an_unknown_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds_mod, "LIMITS", InputLimits(max_nodes=3, max_node_name_chars=40))
    recs = _records(list(range(8)), 30)
    for r in recs:
        r["node"] = f"gpu-node-{r['rank']:03d}" if r["rank"] != 7 else "n" * 300
    rep = analyze_slow(recs)
    assert rep.input.nodes == 3 and rep.input.ranks == 8 and rep.input.bad_records == 0
    assert any("unknown node" in w for w in rep.input.warnings)


def _pyspy(frames: int, line: str = "10") -> str:
    body = "".join(f"    f{i} (train.py:{line})\n" for i in range(frames))
    return ("Process 4242: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            'Thread 4242 (idle): "MainThread"\n' + body)


def test_a_stack_deeper_than_the_bound_keeps_the_innermost_frames() -> None:
    (t,) = parse_dump(_pyspy(100_000))
    assert len(t.frames) == LIMITS.max_frames and t.dropped_frames == 100_000 - LIMITS.max_frames
    assert t.frames[0].name == "f0"
    doc = [{"thread_name": f"t{i}", "os_thread_id": i, "frames": [{"name": "run", "filename": "x.py", "line": 1}]}
           for i in range(LIMITS.max_threads + 50)]
    assert len(parse_dump(json.dumps(doc))) == LIMITS.max_threads


def test_a_line_number_of_thousands_of_digits_is_not_a_crash() -> None:
    """int() of a 5,000-digit line number raised ValueError (Python's digit limit) out of the text parser."""
    with pytest.raises(DumpError):
        parse_dump(_pyspy(3, line="9" * 5000))
    dumps = StackDumps(where="dumps")
    for snap in ("0000", "0001", "0002"):
        dumps.add(DumpPath("", snap, 0), DumpFile(name=f"{snap}/rank-0.txt", data=_pyspy(3, "9" * 5000).encode()))
        dumps.add(DumpPath("", snap, 1), DumpFile(name=f"{snap}/rank-1.txt", data=_pyspy(3).encode()))
    rep = analyze_dumps(dumps)
    assert rep.ranks == 1 and any("rank-0.txt" in w for w in rep.warnings)


def test_rank_ids_from_dump_names_and_ranks_json_are_bounded() -> None:
    assert dump_member("dumps/0000/rank-3.txt") == DumpPath("dumps", "0000", 3)
    assert dump_member(f"dumps/0000/rank-{LIMITS.max_rank + 1}.txt") is None
    assert dump_member("dumps/0000/rank-" + "9" * 5000 + ".txt") is None
    src = FIX / "sleep_before_allreduce"
    dumps = StackDumps(where=str(src))
    for snap in sorted(p.name for p in src.iterdir() if p.is_dir()):
        for r in range(4):
            dumps.add(DumpPath("", snap, r), DumpFile(name=f"{snap}/rank-{r}.json", path=str(src / snap / f"rank-{r}.json")))
    meta = json.loads((src / "ranks.json").read_text())
    meta.update({str(10**12): {"node": "evil"}, "9" * 5000: {"node": "evil"}, "-3": {"node": "evil"}})
    dumps.ranks_json = json.dumps(meta).encode()
    rep = analyze_dumps(dumps)
    assert rep.ranks == 4 and rep.suspects[0].rank == 2


def test_steps_waiting_for_their_ranks_are_bounded() -> None:
    """A stream that claims a world it never fills (one record per step of a 1,000-rank job) kept every
    step pending for ever: memory and the per-step scan grew with the stream."""
    det = SlowDetector(world_size=1000)
    for s in range(3000):
        det.update(_records([s % 7], 1, first=s))
    assert len(det.pending) <= LIMITS.max_pending_steps + 1
    rep = det.report()
    assert rep.input.records == 3000 and rep.input.incomplete_steps >= 3000 - LIMITS.max_pending_steps - 1
