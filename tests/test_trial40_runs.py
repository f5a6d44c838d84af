"""A new user's trial 40 (/work/trial40_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial40``: real torch.multiprocessing.spawn runs on this machine, with py-spy dumps)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial40"


def test_an_early_dump_of_the_job_still_training_does_not_undo_the_hang_the_logs_report() -> None:
    """r02 (spawn, 3 ranks): rank 2 spins in a busy loop from step 15; ranks 0 and 1 wait in DDP's all-reduce until
    gloo's 30 s timeout. Three py-spy rounds, the first taken just before the hang: every rank's stack differed between
    the first two rounds, so all read "still moving" ("Not hung: 3 of 3 rank(s) still change their stacks") and the
    answer was unknown, for the platform. The logs report the hang; the last two rounds place it."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r02_bundle"), kb=False, llm=False))
    assert d.hang is not None and d.hang.hung, d.hang
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_hang", "user_code", 2), \
        d.root_cause.summary
    assert "Culprit: rank 2" in d.root_cause.summary
    assert "the logs do not name the rank that never joined" not in d.root_cause.summary


def test_a_data_shard_torch_load_refused_by_pytorchfilereader_is_data() -> None:
    """r03 (two torchrun agents as two nodes): rank 3's shard is truncated; `batch = torch.load(shard)` fails in
    PyTorchFileReader with "OSError: [Errno 22] Invalid argument". It read storage, "resume from the previous complete
    checkpoint"; the job's own load call names a data shard, as the other torch.load failures are read."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r03_bundle"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank, d.first_failing_node) == ("data", 3, "node1"), d.root_cause.summary


def test_json_step_lines_named_jsonl_are_read_as_step_lines_when_they_carry_no_feed_times() -> None:
    """r11 (spawn, 3 ranks, `{"rank": 1, "step": 50, "step_ms": 91.83, "data_ms": 0.13}` per rank and step, saved as
    stdout.jsonl): `diag slow` read it as a timing feed without start/end or step_time_s and said "only 140 step
    record(s): not enough to learn a baseline" for 140 steps; the same file named .log showed the 9x slowdown."""
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(RUNS / "r11_stdout.jsonl")
    assert rep.input.format.startswith("logs")
    assert rep.job_slowdown and 48 <= rep.job_slowdown[0].start_step <= 52, rep.summary
    assert not any("not enough to learn a baseline" in w for w in rep.input.warnings), rep.input.warnings


def test_a_straggler_ranks_node_comes_from_its_logs_folder() -> None:
    """r10 (two torchrun agents as two nodes, each node's --log-dir tree under node0/ and node1/): rank 2 (node1) waits
    60 ms more for its data from step 60. The straggler was named without its node (first_failing_node null)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10_bundle"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank, d.first_failing_node) == ("fail_slow", 2, "node1"), \
        d.root_cause.summary
    assert d.slow is not None and [(s.rank, s.node) for s in d.slow.stragglers] == [(2, "node1")]
    # the input line counts the ranks and nodes the lines came from, not the job series' (-1) rank
    assert (d.slow.input.ranks, d.slow.input.nodes) == (4, 2)


def test_two_agreeing_snapshots_alone_are_undecided_not_not_hung() -> None:
    """r01 (torchrun, 2 ranks): rank 1 sleeps in the job's code at step 20 while rank 0 waits in DDP's all-reduce; two
    py-spy rounds were taken during the hang. `diag hang dumps/` headed its report "not hung" (three snapshots are
    needed to time a hang); with the logs it named rank 1."""
    from diag_service.hang.analyzer import HangRequest, analyze_hang

    alone = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r01" / "dumps")))
    assert (alone.hung, alone.undecided) == (False, True)
    assert "2 of 2 rank(s) show the same stack" in alone.explanation and "--logs" in alone.explanation
    placed = analyze_hang(HangRequest(dumps_dir=str(RUNS / "r01" / "dumps"), hung_from_logs=True))
    assert (placed.hung, placed.undecided) == (True, False)
    assert [s.rank for s in placed.suspects][:1] == [1], placed.explanation
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r01"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
