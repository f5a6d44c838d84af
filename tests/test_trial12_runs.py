"""Real runs of a new user's trial (trial 12: gloo/CPU DDP jobs on two simulated nodes, Ray Train), each the input of
an answer the trial found wrong; the fixtures are the runs' logs as the tool read them (``tests/fixtures/trial12``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial12"


def _diagnose(name: str):
    return diagnose(DiagnoseRequest(path=str(FIX / name), kb=False, llm=False))


def test_rays_dashboard_skipping_optional_modules_is_not_the_failure() -> None:
    """A Ray session folder (every file of /tmp/ray/session_*/logs): the dashboard's INFO lines about optional modules
    it could not import ("No module named 'opentelemetry.exporter'") were the answer at 0.79 (config, "missing
    module"); the worker's own IndexError (targets out of range) is the failure."""
    d = _diagnose("r11_ray_session")
    assert d.category.value == "data", d.root_cause.summary
    assert "IndexError: Target 10 is out of bounds" in d.root_cause.evidence[0].text
    assert any(h.signature_id == "import_error" and h.role.value == "context" for h in d.signature_hits)


def test_an_agents_lost_store_after_rank_0_raised_is_its_consequence() -> None:
    """Rank 0 (node0, which hosts the c10d store in its agent) raised KeyError; node0's agent exited, and node1's
    agent lost the store 2 s later (RendezvousConnectionError: "Did the remote server shutdown or crash?"). The
    agent's report names no rank, and was the answer (config, "check MASTER_ADDR/PORT"); the rank's own error is."""
    d = _diagnose("r17_rank0_keyerror")
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.first_failing_rank == 0
    assert "KeyError" in d.root_cause.evidence[0].text


def test_an_operator_ending_a_hang_is_its_teardown_not_a_preemption() -> None:
    """Rank 3 (node1) blocks on a file lock; three py-spy snapshots and the gloo Flight Recorder were taken, then the
    operator SIGTERMed both agents. The agents' death signal (infrastructure, "preempted", both nodes) came after the
    stalled all-reduce was enqueued (the Flight Recorder's time, the snapshots having none): teardown. The culprit's
    own frame decides (user_code), and no node is blamed for the signal."""
    d = _diagnose("r01_lock_hang_sigterm")
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.first_failing_rank == 3 and d.faulty_nodes == []
    assert d.hang is not None and d.hang.stuck_since_time is not None
    # the signal is the hang's end: after the stalled collective was enqueued (Flight Recorder), and long after the
    # job's last progress line (the logs alone say so since trial 13's r24)
    assert any("consequence of the hang (its teardown)" in f or "whoever sent the signal ended a hang" in f
               for f in d.findings), d.findings


def test_one_snapshot_places_the_ranks_when_the_flight_recorder_shows_the_hang() -> None:
    """Rank 1 polls for a flag file forever; one py-spy snapshot per rank and the Flight Recorder (rank 1 never
    joined all-reduce #125), then the job was killed. One snapshot is enough to say where the culprit is once the
    Flight Recorder shows the hang: the job's own frame (train_ddp.py:89), user_code."""
    d = _diagnose("r12_flag_hang_one_snapshot")
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.first_failing_rank == 1 and d.faulty_nodes == []
    assert "train_ddp.py:89" in d.root_cause.summary


def test_a_straggler_named_in_two_phases_is_the_diagnosis_rank_and_node() -> None:
    """Rank 2 (node1) in a CPU-quota cgroup from step 100, with the timing feed: the detector names rank 2 as an
    intermittent compute straggler and, through its late all-reduce, a communication one (two findings, one rank).
    The text named it; the structured fields (first failing rank, faulty nodes) now carry it too."""
    d = _diagnose("r14_cpu_straggler_feed")
    assert d.failure_mode.value == "fail_slow"
    assert d.first_failing_rank == 2 and d.faulty_nodes == ["node1"]
    assert d.slow is not None and {s.rank for s in d.slow.stragglers} == {2}


def test_a_compute_straggler_of_a_cpu_job_is_its_hosts_not_a_gpus() -> None:
    """The same run's logs name only the gloo backend (`backend=gloo`, no NCCL line): the slow rank's compute ran on a
    CPU in a throttled cgroup, so the category is the host's (infrastructure), not gpu_hardware as it read."""
    d = _diagnose("r14_cpu_straggler_feed")
    assert d.category.value == "infrastructure", d.root_cause.summary
    assert any("runs on CPUs" in f for f in d.findings)


def test_an_agent_signalled_on_one_node_does_not_take_a_rank_from_the_other_nodes_table() -> None:
    """node1's torchrun agent got SIGTERM (a preemption); node0's agent then reported its own rank 1 as its "first
    observed failure" (a cascade: its peers on node1 were gone). The cause is node1's; node0's table does not name the
    first failing rank (it was rank 1, on node0)."""
    d = _diagnose("r13_node1_agent_sigterm")
    assert d.category.value == "infrastructure"
    assert d.faulty_nodes == ["node1"]
    assert d.first_failing_rank is None, d.root_cause.summary


def test_a_corrupt_checkpoint_read_by_every_node_blames_no_node_and_says_the_ranks_own() -> None:
    """Every rank of both nodes fails in torch.load on the same truncated file (shared storage). The summary said "rank 2
    on node node0" (rank 2 runs on node1: its own line says so) and both nodes were faulty; the same error on every
    node singles none out."""
    d = _diagnose("r08_corrupt_checkpoint_all_nodes")
    assert d.category.value == "storage"
    assert d.faulty_nodes == []
    # every rank raised it at once: no rank is singled out either, the summary says every rank
    assert d.first_failing_rank is None and "on every rank (4)" in d.root_cause.summary, d.root_cause.summary


def test_logs_holding_only_the_launchers_banner_point_at_the_rendezvous() -> None:
    """Both nodes' torchrun agents started (their OMP_NUM_THREADS banner) and waited in the rendezvous, its port held by
    another process; the operator killed them after 100 s. The answer was fail_stop "no known failure" and L0 "check
    that these are the failed job's logs"; the logs say the job never got past its start."""
    from diag_service.domain import RecoveryLevel
    from diag_service.pipeline import DiagnoseRequest, diagnose

    d = diagnose(DiagnoseRequest(path=str(FIX / "r06_rendezvous_port_taken"), kb=False, llm=False, recovery=True))
    assert d.failure_mode.value == "fail_hang"
    assert d.root_cause.summary.startswith("The logs hold only the launcher's start-up lines")
    assert d.recovery is not None and d.recovery.rule_id == "rendezvous_never_left"
    assert d.recovery.level is RecoveryLevel.L4


def test_diag_hang_with_the_logs_agrees_with_diagnose_on_one_snapshot() -> None:
    """Rank 2's DataLoader worker blocks on a socket; the others time out in gloo's all-reduce; one py-spy snapshot per
    rank. `diag hang DUMPS --logs LOGS` said "not hung: not enough snapshots" while `diag diagnose` on the same
    bundle, reading the timeouts, named rank 2: the logs' timeouts now let the one snapshot place the ranks here too."""
    import json

    from typer.testing import CliRunner

    from diag_service.cli import app

    run = FIX / "r02_loader_hang_one_snapshot"
    res = CliRunner().invoke(app, ["hang", str(run / "dumps"), "--logs", str(run), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["hung"] is True and rep["suspects"][0]["rank"] == 2
    # the logs' findings are their own field, not warnings (new users read "warning: logs: ..." as a problem)
    assert rep["log_findings"] and not any(w.startswith("logs: ") for w in rep["warnings"])
    assert _diagnose("r02_loader_hang_one_snapshot").first_failing_rank == 2
