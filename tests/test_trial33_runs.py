"""A new user's trial 33 (/work/trial33_inputs/REPORT.md): real gloo/CPU runs, runs under the live agent and
public-thread logs the tool misled on or got partly right at first contact, each read as the user gave it
(``tests/fixtures/trial33``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial33"


def _diagnose(name: str):
    return diagnose(DiagnoseRequest(path=str(RUNS / name), kb=False, llm=False))


def test_a_rank_banner_states_the_world_size_so_the_silent_rank_is_named() -> None:
    """r04 (torchrun --tee 3, 3 ranks): rank 1 skipped a step and never entered the all-reduce; ranks 0 and 2 timed
    out. Every rank printed "rank N/3 started": the job's size, so the one rank that did not time out is the one
    they waited for. It read "the logs do not name the rank that never joined"."""
    d = _diagnose("r04_console.log")
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert "never joined" not in d.root_cause.summary


def test_the_live_agents_own_log_is_not_the_jobs() -> None:
    """r24 (`diag watch --log-file agent.log -- torchrun ...`, a run that finished on every rank): the agent's own
    "[diag watch] DIAG_AGENT_TOKEN is not set ... refuses every batch" line made the finished run a fail_stop ("the
    ranks disagree on how many steps"). The agent's log file is skipped; its lines in the console are passed over."""
    d = _diagnose("r24_bundle")
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert any("agent.log" in w and "diag watch" in w for w in d.input.warnings)
    assert not any(e.file == "agent.log" for e in d.root_cause.evidence)


def test_a_flushed_work_request_does_not_cordon_the_node_that_reported_it() -> None:
    """r13 (DeepSpeed in Docker, NCCL "NET/IB: Got completion from peer 10.0.1.23<34696> with status=5"): a flushed
    work request (IBV_WC_WR_FLUSH_ERR) follows an earlier error on the queue pair or the peer's exit. It named the
    reporting node faulty at 0.75 and cordoned it; its glog time without a year ("E1229") was put in the future."""
    d = _diagnose("r13_worker.log")
    assert "nccl_ib_wr_flushed" in {h.signature_id for h in d.signature_hits}
    assert d.faulty_nodes == [] and d.confidence < 0.5, (d.faulty_nodes, d.confidence)
    assert d.recovery is not None and d.recovery.level.value != "L3"
    stamps = [e.timestamp for e in d.root_cause.evidence if e.timestamp]
    assert stamps and all(s < "2026-12-07" for s in stamps), stamps


def test_srun_saying_another_nodes_task_failed_first_overrules_one_nodes_launcher_table() -> None:
    """r20 (FSDP on 4 Slurm nodes, the tail of the .out file): cn02's torchelastic table says "first observed
    failure: rank 4", but srun reports cn01's task 0 "Exited with exit code 1" first and cn02's task "Terminated"
    after it. Rank 4 (cn02) was named."""
    d = _diagnose("r20_slurm.out")
    assert d.first_failing_rank != 4 and d.faulty_nodes == [], (d.first_failing_rank, d.faulty_nodes)
    assert any("srun reports node cn01" in f for f in d.findings), d.findings


def test_rusts_allocation_failure_is_host_memory() -> None:
    """r19 (DeepSpeed-Chat on 8 GPUs): three processes printed Rust's "memory allocation of 2097152 bytes failed"
    (a tokenizer library's allocator) and aborted; the launcher killed the rest. It read "no rank's own error"."""
    d = _diagnose("r19_launcher.log")
    assert d.category.value == "host_oom", d.root_cause.summary
    assert "rust_alloc_failed" in {h.signature_id for h in d.signature_hits}


def test_a_peers_dump_signal_is_a_collective_timeout_elsewhere() -> None:
    """r12 (prime-rl on Slurm, rank 0's stderr): "Received a dump signal due to a collective timeout from rank 13":
    rank 13's watchdog timed out. It read "the logs end without an error" (the job still running)."""
    d = _diagnose("r12_rank0_stderr.log")
    assert d.failure_mode.value == "fail_hang"
    assert "nccl_dump_signal_from_peer" in {h.signature_id for h in d.signature_hits}
    assert "logs end without an error" not in d.root_cause.summary


def test_a_hang_in_the_first_collective_is_not_just_restarted() -> None:
    """r15 (verl on Ray and Slurm): the ALLREDUCE at SeqNum 1 timed out: nothing ever passed between the ranks, and a
    relaunch as it is hangs again. It said "kill and restart from the checkpoint"."""
    d = _diagnose("r15_ray_driver.log")
    assert d.failure_mode.value == "fail_hang"
    assert any("first collective (SeqNum 1)" in f for f in d.findings), d.findings
    assert d.recovery is not None and d.recovery.level.value == "L4", d.recovery


def test_a_named_absentee_drops_the_timeouts_nobody_named_sentence() -> None:
    """r14 (litgpt on Slurm, 4 ranks): the text said both "every one but rank 0 timed out ...: rank 0 never entered
    it" and "the logs do not show which rank never joined"."""
    d = _diagnose("r14_slurm_job.out")
    assert d.first_failing_rank == 0
    assert "do not show which rank never joined" not in d.root_cause.summary
    assert not any("do not show which rank never joined" in f for f in d.findings)


def test_a_stuck_watchdog_is_said_as_such_not_as_collective_timeouts() -> None:
    """r16 (VLM-R1, a paste hard-wrapped at 116 columns): rank 6's heartbeat monitor found its NCCL watchdog stuck
    for 480 s. It read "Ranks timed out waiting in collectives": no collective timed out."""
    d = _diagnose("r16_train.log")
    assert d.failure_mode.value == "fail_hang"
    assert "timed out waiting in collectives" not in d.root_cause.summary
    assert "watchdog thread of rank(s) [6] was stuck" in d.root_cause.summary
