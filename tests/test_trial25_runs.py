"""A new user's trial 25 (/work/trial25_inputs/REPORT.md): real gloo/CPU runs the tool got partly right or misled on at
first contact, each read from the run's own bundle (``tests/fixtures/trial25``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial25"


def test_every_rank_waiting_in_the_same_broadcast_is_not_called_a_network_failure() -> None:
    """r11 (two agents x two ranks, per-node files, one py-spy snapshot): broadcast's src computed as rank - LOCAL_RANK,
    so node0 waits for rank 0 and node1 for rank 2; all four ranks time out in the same broadcast at the same line. It
    read "The connection between the ranks failed ... not a rank's code", platform, restart then cordon. A rooted
    collective's root may differ between ranks: the answer says both and claims neither."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r11_bcast_localrank"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.category.value == "unknown", d.root_cause.summary
    assert "same broadcast" in d.root_cause.summary and "must be the same on every rank" in d.root_cause.summary
    assert "The connection between the ranks failed" not in d.root_cause.summary


def test_every_rank_waiting_in_the_same_all_reduce_still_reads_a_failed_link() -> None:
    """The counter-example (zoo dev, two nodes, a link taken down): every rank times out in DDP's all-reduce inside
    backward at the same line; an unrooted collective every rank joined: the connection failed."""
    run = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b6_net_link_down_twonode"
    d = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert d.category.value == "network", d.root_cause.summary


def test_one_ranks_log_that_only_lost_its_peer_names_no_rank_and_asks_for_the_others() -> None:
    """r04 (two agents; only node0's log pasted): rank 1 on node1 died of a UnicodeDecodeError; rank 0's own error is
    gloo's "Connection closed by peer ... caused by a remote worker crashing", then SIGABRT. The report named rank 0
    (the victim) first failing and suggested a restart. The one rank in the logs noticed: no rank is named, and the
    summary asks for the other ranks' logs."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r04_node0.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_stop" and d.first_failing_rank is None, d.root_cause.summary
    assert d.root_cause.summary.startswith("Only rank 0's output is in these logs")


def test_a_launcher_summary_alone_still_names_its_rank() -> None:
    """The counter-example (public corpus dev, LLaMA-Factory): only torchrun's ChildFailedError table, naming rank 1 as
    the first observed failure; no lost-peer report: rank 1 stays named."""
    log = Path(__file__).resolve().parents[1] / "eval" / "corpus" / "logs" / "hf-021.log"
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.first_failing_rank == 1, d.root_cause.summary


def test_the_first_failing_ranks_node_is_in_the_answer_and_the_mismatch_is_worded_as_the_message_says() -> None:
    """r20 (two agents, .zip of per-node logs): node1's config copy built dim 48 where node0's built 64; DDP's check:
    "params[0] in this process with sizes [2000, 48] appears not to match". The text said "rank 1 on node node1" but the
    JSON's faulty_nodes was empty (a config fault names no faulty node), and it said "the parameter counts differ" (the
    sizes did). The rank's node is its own field; the explanation names counts or sizes."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r20_dim_node1.zip"), kb=False, llm=False))
    assert (d.first_failing_rank, d.first_failing_node) == (1, "node1"), d.root_cause.summary
    assert "parameter counts differ" not in d.root_cause.summary and "sizes or strides" in d.root_cause.summary


def test_a_non_finite_loss_at_a_learning_rate_of_thousands_is_the_config() -> None:
    """r14 (mp.spawn, one file): lr 4e3 meant 4e-3; the job's guard raised "non-finite loss inf at step 5
    (lr=4000.0)". It read data, "Resume from an earlier checkpoint with the offending data skipped". The line states the
    learning rate, far above any optimizer's range: config."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r14_lr_typo_nan"), kb=False, llm=False))
    assert d.category.value == "config" and d.responsible.value == "user", d.root_cause.summary


def test_a_ranks_work_outside_the_timed_phases_names_it_not_the_host() -> None:
    """r17 (mp.spawn, folder + timing.jsonl): from step 150 rank 0 runs a per-step weight monitor outside the timed
    phases; its compute_s stays at 13 ms while its step doubles, and rank 1's compute_s rises to 36 ms (it waits in the
    all-reduce inside backward). It read "every rank's compute time rose alike", infrastructure, no rank. The untimed
    time names rank 0 and the job's own code, from about step 150."""
    from diag_service.slow.analyze import analyze_slow

    feed = RUNS / "r17_specnorm_rank0" / "timing.jsonl"
    rep = analyze_slow(feed)
    assert [s.rank for s in rep.stragglers] == [0] and rep.category.value == "user_code", rep.summary
    assert 140 <= rep.stragglers[0].first_step <= 160
    assert not any("rose alike" in w for w in rep.input.warnings)
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r17_specnorm_rank0"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_slow", "user_code", 0)
    assert d.faulty_nodes == [] and d.first_failing_node == "node0"


def test_ranks_in_different_collectives_name_the_one_whose_last_line_announced_its_stop() -> None:
    """r08 (accelerate, one file, three py-spy snapshots): rank 0 logged "early stopping at step 150" and waited in the
    final barrier while rank 1 waited in DDP's all-reduce. The report said "which rank left the common path is not in
    these reports"; then the ranks' differing last lines were told without a rank claimed. Since trial 37 (r06, a rank
    whose shard ran out: "rank 1 training finished at step 32") the one rank whose own last line announces its stop is
    named: it left the loop first."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r08_early_stop_rank0"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.first_failing_rank == 0
    assert "rank 0's own last line says it stopped" in d.root_cause.summary
    assert "early stopping at step 150" in d.root_cause.summary
