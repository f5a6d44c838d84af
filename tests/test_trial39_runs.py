"""A new user's trial 39 (/work/trial39_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial39``: real torchrun runs on this machine)."""

from __future__ import annotations

from pathlib import Path

from diag_service.extract.global_ranks import fill_global_ranks
from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial39"


def test_a_local_rank_prefix_on_the_second_node_is_read_as_that_nodes_global_rank() -> None:
    """r11 (two torchrun agents as two nodes, --tee 3 and --log-dir): global rank 3 (node1, local rank 1) segfaults in
    the job's ctypes call; its faulthandler dump carries only node1's "[default1]:" prefix, and node0's rank 1 aborts
    later (node0's torchelastic table roots at it). It said rank 1 (the one other rank with an error of its own) with
    no node; node1's table ("rank : 3 (local_rank: 1)") says which global rank node1's local rank 1 was."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r11_logs"), kb=False, llm=False))
    assert d.category.value == "user_code" and d.failure_mode.value == "fail_stop"
    assert d.first_failing_rank == 3, d.root_cause.summary
    assert d.first_failing_node == "node1"
    assert "on rank 3 on node node1" in d.root_cause.summary


def test_global_ranks_are_filled_only_from_a_nodes_own_map() -> None:
    """The map is per node: node0's "rank 1 = local 1" gives node1's local rank 1 nothing; a node whose events contradict
    each other gives nothing; a bundle of one node is left to the localizer (local = global there)."""
    from diag_service.contracts import RawEvent, TemplateGroup
    from diag_service.domain import EventKind

    def group(*evs: RawEvent) -> TemplateGroup:
        g = TemplateGroup(template_id=len(evs), template="t", kind=EventKind.TRACEBACK)
        for i, ev in enumerate(evs):
            g.add(ev, i)
        return g

    def ev(rank: int | None, local: int, node: str, key: str = "k") -> RawEvent:
        return RawEvent(kind=EventKind.TRACEBACK, key=key, lines=[key], path=f"{node}.log", line=1, rank=rank,
                        local_rank=local, node=node)

    seg = ev(None, 1, "node1", "segfault")
    groups = [group(ev(1, 1, "node0", "table0")), group(seg)]
    assert fill_global_ranks(groups) == 0 and seg.rank is None
    groups.append(group(ev(3, 1, "node1", "table1")))
    assert fill_global_ranks(groups) == 1 and seg.rank == 3 and 3 in groups[1].ranks
    torn = ev(None, 0, "node1", "other")
    assert fill_global_ranks([group(ev(2, 0, "node1", "a"), ev(4, 0, "node1", "b")), group(torn),
                              group(ev(0, 0, "node0", "c"))]) == 0
    assert torn.rank is None
    alone = ev(None, 1, "node0", "x")
    assert fill_global_ranks([group(ev(1, 1, "node0", "t")), group(alone)]) == 0 and alone.rank is None


def test_a_ranks_watchdog_exception_report_is_a_timeout_in_that_collective(corpus_dev_case) -> None:
    """Public corpus dev hf-001 (LlamaFactory#7396; trial 39's r19 pasted the same thread): ranks 0 and 4 report the
    watchdog's timeout of WorkNCCL(SeqNum=1580), rank 3 only torch 2.2's "Exception (either an error or timeout)
    detected by watchdog at work: 1580". It named rank 3 as the rank that "never reached it"; it reached it."""
    d = corpus_dev_case("hf-001")
    assert d.failure_mode.value == "fail_hang"
    assert d.first_failing_rank is None, d.root_cause.summary
    assert "3 rank(s) timed out in ALLREDUCE at SeqNum 1580" in d.root_cause.summary


def test_yearless_glog_stamps_take_the_year_of_torchelastics_failure_table() -> None:
    """r15 (SimpleTuner#759, a 2024 paste): glog stamps ("E814 13:15:58") were read in today's year and the failure
    table's "time : 2024-08-14_13:16:02" in its own, and the report warned "events span 730 days: the bundle may hold
    logs of several jobs"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r15_simpletuner759_paste.log"), kb=False, llm=False))
    assert not any("events span" in w for w in d.input.warnings), d.input.warnings
    assert d.root_cause.evidence and all(e.timestamp is None or e.timestamp.startswith("2024-08-14")
                                         for e in d.root_cause.evidence)


def test_the_one_rank_that_did_not_time_out_is_named_from_the_failure_tables_world(tmp_path: Path) -> None:
    """r05 (torchrun, 3 ranks, accelerate's logging): rank 1 blocks in open() of a shard on a hung mount; ranks 0 and 2
    time out in the all-reduce (gloo's send/recv timeouts), rank 1 is SIGTERMed. Only torchelastic's failure table says
    the job had 3 ranks; it said "the logs do not name the rank that never joined"."""
    import shutil

    shutil.copy(RUNS / "r05_logs" / "accelerate_job.log", tmp_path / "accelerate_job.log")
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    assert "every one but rank 1 timed out" in d.root_cause.summary


def test_a_rank_stuck_in_its_datasets_read_under_an_in_process_dataloader_is_storage() -> None:
    """r05 with its py-spy snapshot: rank 1 sits in ShardDataset.__getitem__ under the DataLoader's in-process fetcher
    (num_workers=0) while its peers wait in the all-reduce. It said user_code, "do not start it again: hand the job to
    its owner"; the read of a sample that never returns is the data's storage (as a worker's read is), restarted once
    the mount is healthy."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r05_logs"), kb=False, llm=False))
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("storage", "fail_hang", 1), \
        d.root_cause.summary
    assert "do not name the rank" not in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value != "L4", d.recovery
