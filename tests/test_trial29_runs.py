"""A new user's trial 29 (/work/trial29_inputs/REPORT.md): real gloo/CPU runs the tool got partly right, misled on or
got wrong at first contact, each read from the run's own bundle (``tests/fixtures/trial29``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.hang import HangRequest, analyze_hang
from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial29"


def test_two_ranks_in_different_collectives_are_the_jobs_code_paths_not_a_restart() -> None:
    """r10 (mp.spawn, output.log + 3 py-spy snapshots): only rank 0 called torch.distributed.checkpoint.save (a
    collective); rank 0 waits in its all_gather, rank 1 in the barrier after it. `diag hang` named "rank 1, stuck in
    barrier, as many ranks as the group in all_gather" and the diagnosis read category unknown, the platform, an L2
    restart that hangs again at the next save. One rank on each side names no rank from the stacks; the split itself is
    the job's code."""
    rep = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r10_dcp_save_rank0" / "dumps")))
    assert rep.hung and rep.suspects and rep.suspects[0].kind == "split_mismatch"
    assert "same_collective" not in {s.kind for s in rep.suspects}
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10_dcp_save_rank0"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "user_code"), d.root_cause.summary
    assert d.responsible.value == "user"


def test_a_rank_that_left_silently_under_spawn_is_not_read_as_slow_nor_as_its_code() -> None:
    """r03 (mp.spawn, one file): an operator's SIGINT to rank 1 after step 200; spawn's child wrapper swallows the
    KeyboardInterrupt, so rank 1 exits 0 without a line, and rank 0 fails in backward. It read "fail_slow" from
    "Throughput collapsed about 9x" (rank 0's "eval at step 200" line after its step-200 line taken as the interval
    to step 200) and "The job's own code let one rank finish ... a restart would fail the same way"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r03_job.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_stop" and d.first_failing_rank == 1, d.root_cause.summary
    assert "collapsed" not in d.root_cause.summary and not any("collapsed" in f for f in d.findings)
    assert d.category.value == "unknown" and "SIGINT" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value != "L4"


def test_a_rank_slow_in_two_phases_is_its_host_not_its_data() -> None:
    """r13 (two agents, per-node logs + timing.jsonl): node1 (rank 1) moved into a 0.3-CPU cgroup at step 250. The feed
    names rank 1 an intermittent data straggler and an intermittent compute straggler; it read category data and
    "Hand the slowdown's cause ... to the job owner". A quota stalls whatever phase the rank is in: the host."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_cpu_quota_rank1"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 1, d.root_cause.summary
    assert d.category.value == "infrastructure" and d.faulty_nodes == ["node1"]
    assert d.recovery is not None and d.recovery.responsible.value != "user"


def test_a_store_host_that_never_resolves_is_the_launchs_address() -> None:
    """r06 (two agents, static rendezvous; per-node files): node1 was launched with a stale --master-addr; its c10d
    client printed the IPv6 lookup warning of that name for ten minutes ("gai error: -2 - Name or service not known")
    and node0's log stayed empty. It read category unknown and "take stack dumps of every rank" for a job whose ranks
    never started. A warning printed once at start-up by working runs is harmless; nineteen times with nothing else is
    a name that never resolved."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06_master_addr_typo"), kb=False, llm=False))
    assert d.category.value == "config" and "trainer-head-0.cluster.internal" in d.root_cause.summary
    assert "stack dumps" not in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


@pytest.mark.parametrize("times", [1, 3])
def test_a_lookup_warning_printed_at_start_up_is_still_harmless(tmp_path: Path, times: int) -> None:
    """The same warning once or a few times as a working job starts (it then connects over IPv4) names no cause."""
    line = ("[W1206 22:15:26.572043499 socket.cpp:764] [c10d] The IPv6 network addresses of (trainer-head-0, 29804) "
            "cannot be retrieved (gai error: -2 - Name or service not known).\n")
    (tmp_path / "node1.log").write_text(line * times)
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.category.value == "unknown", d.root_cause.summary


def test_a_header_row_read_as_a_number_is_the_data_even_when_an_outer_frame_names_args() -> None:
    """r05 (accelerate, one file): rank 1's CSV shard is two exports joined with cat, its header repeated mid-file:
    "ValueError: could not convert string to float: 'd0'" in the shard loader. It read user_code ("a kind that comes
    from program logic or configuration"): the rule that keeps command-line values out looked at every frame, and an
    outer one passes args.data to the loader."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r05_train.log"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("data", 1), d.root_cause.summary
