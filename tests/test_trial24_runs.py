"""A new user's trial 24 (/work/trial24_inputs/REPORT.md): real gloo/CPU runs the tool got partly right at first
contact, each read from the run's own bundle (``tests/fixtures/trial24``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial24"


def test_a_rendezvous_every_node_timed_out_in_alone_is_the_launch_configuration() -> None:
    """r08 (two torchrun agents, per-node files): node1 launched with a mistyped --rdzv-endpoint port; both agents
    timed out in the rendezvous. Read: framework, "who acts: the platform", though its own words said the launch
    commands disagree. When every node of the logs waited alone, the commands disagree: config, the job's owner."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r08_node1_wrong_port"), kb=False, llm=False))
    assert d.category.value == "config" and d.responsible.value == "user", d.root_cause.summary
    assert "launch commands most likely disagree" in d.root_cause.summary


def test_a_feed_whose_episodes_cost_a_sliver_of_the_run_is_headed_minor_not_fail_slow() -> None:
    """r09 (torchrun, a 500-step timing feed of about 2 s whose injected fault had no measurable cost): ``diag slow``
    headed it "FAIL-SLOW category: infrastructure" for four short episodes costing 0.08 s, while ``diagnose`` on the same
    bundle said none. The standalone report carries the same materiality verdict and heads it minor."""
    from typer.testing import CliRunner

    from diag_service.slow.analyze import analyze_slow
    from diag_service.slow.cli import app

    feed = RUNS / "r09_anomaly_mode_rank1" / "timing.jsonl"
    rep = analyze_slow(feed)
    assert rep.job_slowdown and rep.minor is not None and "drift" in rep.minor, rep.summary
    out = CliRunner().invoke(app, [str(feed)])
    assert out.exit_code == 0 and out.output.startswith("MINOR") and "FAIL-SLOW" not in out.output, out.output


def test_a_feed_with_a_real_straggler_is_not_minor() -> None:
    """The counter-example: trial 21's r15 feed (Ray Train, rank 1's object-store reads throttled) names a straggler
    that cost seconds: material, headed FAIL-SLOW."""
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(Path(__file__).parent / "fixtures" / "trial21" / "r15_objstore_throttle_rank1_ray" / "timing.jsonl")
    assert rep.failure_mode is not None and rep.stragglers and rep.minor is None, (rep.summary, rep.minor)


def test_a_hang_culprit_that_wrote_no_error_is_shown_with_its_last_lines() -> None:
    """r06 (torchrun --log-dir tree, py-spy snapshots, .tar.gz): rank 1 blocked opening a FIFO nobody writes; its last
    line, "waiting for feature-store snapshot .../ready.fifo", named the cause, and the report cited only the
    launcher's lines and rank 0's timeout. The culprit's last lines of its own are told, with file and line."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06_fifo_hang_logdir.tar.gz"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    told = [f for f in d.findings if f.startswith("Rank 1's last lines")]
    assert told and "stdout.log:14" in told[0] and "waiting for feature-store snapshot" in told[0], d.findings
    assert not any(f.startswith("Rank 0's last lines") for f in d.findings)


def test_the_same_error_raised_by_every_rank_at_once_singles_no_rank_out() -> None:
    """r03 (accelerate launch, one file): OneCycleLR sized from a stale total raised the same ValueError on both ranks
    in the same second; the report named rank 1 (the launcher's first observed failure) as first failing. The cause is
    what the ranks share: no rank is named, the summary says every rank, a finding says why."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r03_onecycle_total_accel.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_stop" and d.first_failing_rank is None, d.root_cause.summary
    assert "on every rank (2)" in d.root_cause.summary
    assert any(f.startswith("Every rank (2) raised this same error") for f in d.findings), d.findings


def test_every_rank_reporting_a_lost_connection_still_names_the_rank() -> None:
    """The counter-example (zoo dev, accelerate, rank 0's connections reset): every rank reports the same connection
    error, but a lost link is one rank's or one node's, not what the ranks share: rank 0 stays named."""
    run = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b17_net_conn_reset_accel_r0"
    d = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert d.category.value == "network" and d.first_failing_rank == 0, d.root_cause.summary
    assert not any("raised this same error" in f for f in d.findings)
