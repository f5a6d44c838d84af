"""Flight Recorder dumps: safe reading and the collective analysis, on real gloo dumps.

The dumps in ``tests/fixtures/flight_recorder/`` come from real 4-rank torchrun runs (see the README
there); variants (JSON form, a size mismatch, P2P, damage) are derived from them field by field.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from diag_service.hang import HangRequest, analyze_hang
from diag_service.hang.flight import (
    FlightRecorderError,
    analyze_collectives,
    analyze_fr_folder,
    parse_fr_dump,
)

FIX = Path(__file__).parent / "fixtures" / "flight_recorder"


def _culprits(folder: Path) -> list[int]:
    rep = analyze_fr_folder(folder)
    assert rep is not None
    return [c.rank for c in rep.culprits]


def test_rank_missing_from_a_subgroup_collective_is_the_culprit() -> None:
    rep = analyze_fr_folder(FIX / "missing_tp")
    assert rep is not None and [c.rank for c in rep.culprits] == [3]
    narrow = {s.group: s for s in rep.stalls}
    # rank 3's TP pair [2,3] and DP pair [1,3] both wait for it at collective #5
    assert any(s.group_ranks == [2, 3] and s.missing == [3] and s.joined == [2] for s in narrow.values())
    assert any(s.group_ranks == [1, 3] and s.missing == [3] for s in narrow.values())
    # rank 2 is missing from DP [0,2] too, but it waits in TP [2,3]: blocked, not a culprit
    assert "2" not in {str(c.rank) for c in rep.culprits} and 2 in rep.waiting


def test_two_faulty_ranks_in_different_subgroups_are_both_named() -> None:
    assert _culprits(FIX / "two_faulty") == [1, 2]


def test_collectives_issued_in_different_orders_are_a_wait_cycle() -> None:
    rep = analyze_fr_folder(FIX / "order")
    assert rep is not None and [c.rank for c in rep.culprits] == [0, 1]
    assert all("wait cycle" in c.reason for c in rep.culprits)


def test_rank_without_a_readable_dump_is_named_and_the_empty_file_is_a_warning() -> None:
    rep = analyze_fr_folder(FIX / "rank_exited")
    assert rep is not None
    assert [c.rank for c in rep.culprits] == [0] and rep.ranks_missing_dump == [0]
    assert any("nccl_trace_rank_0" in w for w in rep.warnings)


def test_json_form_gives_the_same_answer(tmp_path: Path) -> None:
    for f in sorted((FIX / "two_faulty").iterdir()):
        doc = pickle.loads(f.read_bytes())  # our own fixture, written by torch in make_dumps.py
        # _dump_fr_trace_json() writes pg_status values as strings and tuples as lists
        doc["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in doc["pg_status"].items()}
        (tmp_path / f"{f.name}.json").write_text(json.dumps(doc))
    assert _culprits(tmp_path) == [1, 2]


def test_size_mismatch_names_the_odd_rank(tmp_path: Path) -> None:
    shutil.copytree(FIX / "missing_tp", tmp_path / "d")
    # rank 3 joins TP [2,3] collective #5 after all, with twice the elements rank 2 sent
    p = tmp_path / "d" / "nccl_trace_rank_3"
    doc = pickle.loads(p.read_bytes())
    rank2 = pickle.loads((tmp_path / "d" / "nccl_trace_rank_2").read_bytes())
    e = dict(next(x for x in reversed(rank2["entries"]) if not x["retired"]))
    e.update(input_sizes=[[32]], output_sizes=[[32]])
    doc["entries"].append(e)
    p.write_bytes(pickle.dumps(doc))
    dumps = {r: parse_fr_dump((tmp_path / "d" / f"nccl_trace_rank_{r}").read_bytes(), r) for r in range(4)}
    rep = analyze_collectives(dumps)
    tp = next(s for s in rep.stalls if s.group_ranks == [2, 3])
    assert tp.missing == [] and sorted(tp.joined) == [2, 3] and tp.mismatched
    assert "[[32]]" in tp.mismatch_detail


def test_p2p_send_without_its_recv_names_the_peer(tmp_path: Path) -> None:
    # NCCL records P2P as 'nccl:send 0->1' / 'nccl:recv 1<-0' with is_p2p and p2p_seq_id (fr_trace's builder)
    base = pickle.loads((FIX / "two_faulty" / "nccl_trace_rank_0").read_bytes())
    def dump(rank: int, entries: list[dict]) -> dict:
        return {**base, "pg_status": {}, "entries": entries}
    send = {**base["entries"][0], "profiling_name": "nccl:send 0->1", "is_p2p": True, "p2p_seq_id": 1,
            "collective_seq_id": 0, "retired": False, "state": "started"}
    d0 = parse_fr_dump(pickle.dumps(dump(0, [send])), 0)
    d1 = parse_fr_dump(pickle.dumps(dump(1, [])), 1)
    rep = analyze_collectives({0: d0, 1: d1})
    assert [(p.rank, p.op, p.peer) for p in rep.p2p] == [(0, "send", 1)]
    assert [c.rank for c in rep.culprits] == [1]


class _Evil:
    def __reduce__(self):  # noqa: ANN204
        return (os.system, ("touch /tmp/diag_fr_pwned",))


def test_restricted_unpickler_refuses_a_pickle_that_would_run_code(tmp_path: Path) -> None:
    marker = Path("/tmp/diag_fr_pwned")
    marker.unlink(missing_ok=True)
    data = pickle.dumps({"version": "2.10", "entries": [_Evil()]})
    with pytest.raises(FlightRecorderError, match="refused"):
        parse_fr_dump(data, 0, "evil")
    assert not marker.exists()
    # in a folder beside good dumps: a warning, the others still analysed
    shutil.copytree(FIX / "two_faulty", tmp_path / "d")
    (tmp_path / "d" / "nccl_trace_rank_2").write_bytes(data)
    rep = analyze_fr_folder(tmp_path / "d")
    assert rep is not None and not marker.exists()
    assert any("refused" in w for w in rep.warnings) and 2 in rep.ranks_missing_dump


def test_truncated_dump_is_a_warning(tmp_path: Path) -> None:
    shutil.copytree(FIX / "missing_tp", tmp_path / "d")
    p = tmp_path / "d" / "nccl_trace_rank_1"
    p.write_bytes(p.read_bytes()[:700])
    rep = analyze_fr_folder(tmp_path / "d")
    assert rep is not None and any("nccl_trace_rank_1" in w for w in rep.warnings)
    assert 3 in [c.rank for c in rep.culprits]


def test_diag_hang_reads_a_folder_of_only_flight_recorder_dumps() -> None:
    rep = analyze_hang(HangRequest(dumps_dir=str(FIX / "two_faulty")))
    assert rep.hung and rep.evidence == ["flight_recorder"]
    assert [s.rank for s in rep.suspects[:2]] == [1, 2]
    assert rep.collectives is not None and "Flight Recorder" in rep.explanation


def test_diagnose_picks_up_flight_recorder_dumps_in_a_bundle_folder(tmp_path: Path) -> None:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    (tmp_path / "fr").mkdir()
    for f in (FIX / "missing_tp").iterdir():
        doc = pickle.loads(f.read_bytes())
        doc["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in doc["pg_status"].items()}
        (tmp_path / "fr" / f"{f.name}.json").write_text(json.dumps(doc))  # JSON: must not be read as a log
    (tmp_path / "rank0.log").write_text(
        "[rank0]:[E306 00:30:11.701177518 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=16, NumelOut=16, Timeout(ms)=600000) "
        "ran for 600066 milliseconds before timing out.\n"
    )
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.input.files == 1
    assert d.failure_mode.value == "fail_hang"
    assert d.hang is not None and d.hang.evidence == ["flight_recorder"]
    assert d.first_failing_rank == 3


def test_debug_server_dump_dir_is_read_as_stack_snapshots() -> None:
    rep = analyze_hang(HangRequest(dumps_dir=str(Path(__file__).parent / "fixtures" / "debug_server")))
    assert rep.hung and rep.evidence == ["stacks"] and rep.snapshots == 5
    assert rep.suspects[0].rank == 1 and "outside any collective" in rep.suspects[0].reason


@pytest.mark.parametrize("fmt", ["gztar", "zip"])
def test_flight_recorder_dumps_inside_an_archive(tmp_path: Path, fmt: str) -> None:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    src = tmp_path / "bundle"
    shutil.copytree(FIX / "missing_tp", src / "fr")
    (src / "rank0.log").write_text("[rank0]: step 5 loss 1.23\n")
    archive = Path(shutil.make_archive(str(tmp_path / "run"), fmt, src))
    rep = analyze_hang(HangRequest(dumps_dir=str(archive)))
    assert rep.evidence == ["flight_recorder"] and rep.suspects[0].rank == 3
    d = diagnose(DiagnoseRequest(path=str(archive), kb=False, llm=False))
    assert d.input.files == 1 and d.first_failing_rank == 3 and d.failure_mode.value == "fail_hang"


def test_many_dumps_are_read_by_a_process_pool_with_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from diag_service.hang import flight
    from diag_service.ingest.members import find_fr_dumps

    files, _ = find_fr_dumps(FIX / "two_faulty")
    serial, _ = flight.load_fr_dumps(files, workers=1)
    monkeypatch.setattr(flight, "PARALLEL_FROM", 2)
    pooled, warnings = flight.load_fr_dumps(files, workers=2)
    assert not warnings and sorted(pooled) == sorted(serial) == [0, 1, 2, 3]
    assert [c.rank for c in analyze_collectives(pooled).culprits] == [1, 2]


def test_diagnose_of_a_bundle_with_only_flight_recorder_dumps(tmp_path: Path) -> None:
    from diag_service.pipeline import DiagnoseRequest, diagnose

    src = tmp_path / "bundle"
    shutil.copytree(FIX / "missing_tp", src / "fr")
    archive = Path(shutil.make_archive(str(tmp_path / "run"), "gztar", src))
    d = diagnose(DiagnoseRequest(path=str(archive), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 3 and d.input.lines == 0


def test_a_code_running_pickle_is_named_as_such_in_the_warning(tmp_path: Path) -> None:
    marker = Path("/tmp/diag_fr_pwned")
    marker.unlink(missing_ok=True)
    shutil.copytree(FIX / "two_faulty", tmp_path / "d")
    (tmp_path / "d" / "nccl_trace_rank_3").write_bytes(pickle.dumps(_Evil()))  # no dict keys at all
    rep = analyze_fr_folder(tmp_path / "d")
    assert rep is not None and not marker.exists()
    assert any("would call" in w and "system" in w for w in rep.warnings)
    # the default group still spans all four ranks, the one without a readable dump included
    world = next(s for s in rep.stalls if s.group == "0") if any(s.group == "0" for s in rep.stalls) else None
    assert world is None or world.group_ranks == [0, 1, 2, 3]


ZOO_EMPTY_ALLREDUCE = Path(__file__).parents[1] / "eval" / "zoo" / "runs" / "b54_hang_empty_val_loss_allreduce_size_r2" / "fr"


def test_collective_with_other_sizes_on_one_rank_is_the_cause_even_when_every_rank_retired_it() -> None:
    # Real gloo dumps (zoo dev run b54): rank 2's validation tensor was empty, its all_reduce #56 ([[0]]) returned at
    # once and it went on to #57; ranks 0-1 waited in #56 ([[3]]) until the timeout retired every entry. Read by the
    # wavefront alone, ranks 0-1 "never joined #57"; the sizes at #56 name rank 2 (PyTorch's own matcher: a
    # SIZE_OR_SYNTAX_MISMATCH).
    rep = analyze_fr_folder(ZOO_EMPTY_ALLREDUCE)
    assert rep is not None and [c.rank for c in rep.culprits] == [2]
    assert rep.culprits[0].kind == "mismatch" and "[[0]]" in rep.culprits[0].reason
    s56 = next(s for s in rep.stalls if s.seq == 56)
    assert s56.op == "all_reduce" and s56.mismatched == [2] and s56.missing == []


def _entry(seq: int, op: str, sizes: list[list[int]], done: bool) -> dict:
    return {"collective_seq_id": seq, "p2p_seq_id": 0, "profiling_name": f"nccl:{op}", "is_p2p": False,
            "process_group": ("0", "default_pg"), "input_sizes": sizes, "output_sizes": sizes,
            "state": "completed" if done else "started", "retired": done, "time_created_ns": 1_000 + seq}


def _dump(entries: list[dict]) -> bytes:
    return pickle.dumps({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
                         "pg_status": {}, "entries": entries})


def test_rank_that_completed_a_smaller_collective_is_named_while_its_peers_wait_in_it() -> None:
    # NCCL's form of the same fault: a zero-count all_reduce completes on its rank, which then waits in the next one,
    # while its peers' #56 stays incomplete; every rank enqueued #56, so none "never joined".
    base = [_entry(q, "all_reduce", [[64]], True) for q in range(40, 56)]
    dumps = {
        r: parse_fr_dump(_dump(base + [_entry(56, "all_reduce", [[3]], False)]), r) for r in (0, 1)
    }
    dumps[2] = parse_fr_dump(_dump(base + [_entry(56, "all_reduce", [[0]], True), _entry(57, "all_reduce", [[64]], False)]), 2)
    rep = analyze_collectives(dumps)
    assert [c.rank for c in rep.culprits] == [2] and rep.culprits[0].kind == "mismatch"


def test_uneven_all_to_all_sizes_are_not_a_mismatch() -> None:
    # all_to_all's inputs differ across ranks by design (PyTorch's matcher does not compare them): the rank that
    # never joined #9 is the culprit, not the ranks whose splits differ.
    def hist(r: int) -> list[dict]:
        return [_entry(q, "all_to_all", [[10 + r]], True) for q in range(1, 9)]
    dumps = {r: parse_fr_dump(_dump(hist(r) + [_entry(9, "all_reduce", [[4]], False)]), r) for r in (0, 1)}
    dumps[2] = parse_fr_dump(_dump(hist(2)), 2)
    rep = analyze_collectives(dumps)
    assert [c.rank for c in rep.culprits] == [2] and rep.culprits[0].kind == "not_joined"
