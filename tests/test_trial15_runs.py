"""Real runs of a new user's trial (trial 15: gloo/CPU DDP jobs), each the input of an answer the trial found
misleading or partly right; the fixtures are the runs' bundles as the user handed them over
(``tests/fixtures/trial15``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial15"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_a_slowdown_at_the_end_of_a_run_that_reported_completion_is_not_restarted() -> None:
    """r08 (torchrun --log-dir): both ranks' stderr.log end with "training complete: 150 steps", after evaluation
    passes that grew from 0.02 s to 0.28 s. The step-time collapse at the end read as a failed job: "restart from
    the last checkpoint" (L2). The run finished: the slowdown is for its next run (slow_after_completion, L0)."""
    d = _diagnose(FIX / "r08_completed_eval_slow")
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary
    assert any("reported its own completion" in f for f in [d.root_cause.summary, *d.findings])
    # since session 15 the evaluation lines' own durations are read: the passes grew, the job's own work
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id.startswith("slow_after_completion") and d.recovery.level.value == "L0"


def test_a_store_address_where_another_service_answers_is_the_launch_configuration() -> None:
    """r03: MASTER_ADDR/MASTER_PORT point at a host where an HTTP server listens; TCPStore's validation ping gets
    "Expected: 15622, Got: 1347703880" (the bytes of "HTTP"). It read "no known signature", unknown."""
    d = _diagnose(FIX / "r03_master_addr_wrong_service")
    assert d.category.value == "config", d.root_cause.summary
    assert d.signature_hits[0].signature_id == "c10d_store_wrong_endpoint"
    assert "MASTER_ADDR or MASTER_PORT" in d.root_cause.summary


def test_a_refused_upload_to_an_http_store_is_not_a_peer_ranks_connection() -> None:
    """r11: after training, rank 0's upload of the final checkpoint to an artifact store gets urllib's
    "<urlopen error [Errno 111] Connection refused>"; the answer said "a TCP connection to a peer rank or the store
    was reset" (and matched network incidents). An HTTP service the job calls, not a rank."""
    d = _diagnose(FIX / "r11_upload_refused_after_training")
    assert d.signature_hits[0].signature_id == "http_endpoint_refused", [h.signature_id for h in d.signature_hits]
    assert d.category.value == "infrastructure"
    assert "Not a connection between ranks" in d.root_cause.summary


def test_a_process_that_cannot_start_threads_is_named_as_such() -> None:
    """r22: rank 1's DataLoader workers and threads hit the container's pids limit ("RuntimeError: can't start new
    thread" three times). It had answered with a peer's connection reset as the suspect. The limit is named; the
    category stays unknown (a node's limit or the job's thread leak: dev n36c-009's thread does not settle it)."""
    d = _diagnose(FIX / "r22_pids_limit")
    assert d.signature_hits[0].signature_id == "thread_start_failed", [h.signature_id for h in d.signature_hits]
    assert "pids" in d.root_cause.summary and d.first_failing_rank == 1


def test_a_node_preempted_is_not_given_the_rank_of_the_peer_that_noticed() -> None:
    """r17 (two torchrun agents, one console per node): node1's agent gets SIGTERM ("Received 15 death signal"),
    and rank 0 on node0 then reports "Connection closed by peer". The answer said "on rank 0 on node node1": the one
    rank with an error of its own was rank 0, whose error is the lost peer. The node is named, no rank."""
    d = _diagnose(FIX / "r17_node1_agent_sigterm")
    assert d.category.value == "infrastructure", d.root_cause.summary
    assert d.faulty_nodes == ["node1"] and d.first_failing_rank != 0


def test_a_slowdown_that_follows_a_log_flood_is_the_jobs_own_output(tmp_path: Path) -> None:
    """r09 (two torchrun agents as nodes): from step 30 node0's rank prints 3,000 "DEBUG grad stats ..." lines per
    step and the job runs 3x slower; the answer was "infrastructure, check the straggler node's GPUs, links and
    neighbours". The fixture keeps every 50th DEBUG line (60 per step; the real console is 12.7 MB). The step lines'
    own positions show the flood from the step the slowdown follows: user_code. Without the DEBUG lines the same step
    times stay the platform's slowdown."""
    d = _diagnose(FIX / "r09_log_flood_thinned")
    assert d.failure_mode.value == "fail_slow" and d.category.value == "user_code", d.root_cause.summary
    assert "log flood" in d.root_cause.summary and "node0.console.log" in d.root_cause.summary
    # the run completed: nothing to stop ("do not start it again" read against "no job to restart"); the owner fixes it
    assert d.recovery is not None and d.recovery.rule_id == "slow_after_completion_owner", d.recovery
    assert d.recovery.level.value == "L0" and d.recovery.responsible is not None
    assert d.recovery.responsible.value == "user"
    for f in (FIX / "r09_log_flood_thinned").iterdir():
        (tmp_path / f.name).write_text("".join(ln for ln in f.read_text().splitlines(keepends=True)
                                               if not ln.startswith("DEBUG grad stats")))
    d = _diagnose(tmp_path)
    assert d.failure_mode.value == "fail_slow" and d.category.value != "user_code", d.root_cause.summary
