"""Real runs of a new user's trial (trial 13: gloo/CPU DDP jobs under torchrun), each the input of an answer the trial
found wrong; the fixtures are the runs' bundles as the user handed them over (``tests/fixtures/trial13``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial13"


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


def test_an_operator_stopping_a_silent_job_ended_a_hang_not_a_preemption(tmp_path: Path) -> None:
    """Rank 0 spins in its evaluation code after step 39; steps had come every few milliseconds; 15 s later the
    on-call took one py-spy snapshot of every rank and SIGTERMed torchrun. The agent's death signal was the answer
    (infrastructure, "the scheduler cancelled healthy workers", restart once): it came some two thousand step
    intervals after the last step, so it ended a hang, and the one snapshot places the ranks."""
    d = _diagnose(FIX / "r24_busy_eval_cancelled_one_snapshot")
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.category.value == "user_code" and d.first_failing_rank == 0
    assert "run_eval (train.py:73)" in d.root_cause.summary
    assert "launcher was signalled 15 s after the job's last progress line (step 39" in d.root_cause.summary
    hit = next(h for h in d.signature_hits if h.signature_id == "elastic_agent_death_signal")
    assert hit.details.get("context_rule") == "signalled_after_stall" and hit.role.value == "symptom"
    assert d.recovery is not None and d.recovery.level.value == "L4"
    # the logs alone: a hang of unknown cause, not a preemption
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FIX / "r24_busy_eval_cancelled_one_snapshot" / "console.log", logs / "console.log")
    d = _diagnose(logs)
    assert d.failure_mode.value == "fail_hang" and d.category.value == "unknown", d.root_cause.summary
    assert d.root_cause.summary.startswith("The job stalled, then was stopped: ")


def test_three_snapshots_of_the_same_stall_name_the_rank_and_its_code() -> None:
    """The same run with three snapshots: rank 0 was found, but the answer stayed infrastructure / platform."""
    d = _diagnose(FIX / "r24b_busy_eval_cancelled_three_snapshots")
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value == "user_code" and d.first_failing_rank == 0, d.root_cause.summary


def test_a_signal_while_the_job_still_steps_stays_the_cause(tmp_path: Path) -> None:
    """The r24 console with the agent's signal lines stamped at the last step's time (02:05:51.3 -> 02:05:35.93):
    a SIGTERM that arrives while steps still come is the scheduler's or an operator's stop of a working job, and
    stays the root (infrastructure)."""
    text = (FIX / "r24_busy_eval_cancelled_one_snapshot" / "console.log").read_text()
    assert text.count("02:05:51.3") >= 4
    (tmp_path / "console.log").write_text(text.replace("02:05:51.3", "02:05:35.93"))
    d = _diagnose(tmp_path)
    assert d.category.value == "infrastructure" and d.failure_mode.value == "fail_stop", d.root_cause.summary
    hit = next(h for h in d.signature_hits if h.signature_id == "elastic_agent_death_signal")
    assert "context_rule" not in hit.details


def test_nodes_that_all_timed_out_in_the_rendezvous_never_met() -> None:
    """r10: node1's --rdzv-endpoint port was mistyped, so each agent hosted its own store and waited alone; both
    raised RendezvousTimeoutError. The answer named node0 ("on node node0") and a relaunch after a back-off, which
    fails the same way: now every node is said to have waited, and the policy is to compare the launch commands."""
    d = _diagnose(FIX / "r10_rdzv_port_mistyped_node1")
    assert "Every node in these logs (node0, node1) timed out in it" in d.root_cause.summary
    assert "on node node0" not in d.root_cause.summary and d.faulty_nodes == []
    assert d.recovery is not None and d.recovery.rule_id == "rendezvous_never_met" and d.recovery.level.value == "L4"


def test_a_node_that_waited_in_the_rendezvous_is_not_the_one_at_fault() -> None:
    """r11: node1 was never started; node0's agent timed out waiting for it. node0 was the node named."""
    d = _diagnose(FIX / "r11_node1_never_started")
    assert "The agent of node0 reported it: that node arrived and waited" in d.root_cause.summary
    assert "on node node0" not in d.root_cause.summary and d.faulty_nodes == []
    assert d.recovery is not None and d.recovery.rule_id == "rendezvous_retry"


def test_a_loss_printed_as_nan_after_its_key_is_a_diverged_run() -> None:
    """r19: rank 1's config gives accumulation 0 and every rank's loss reads 'loss nan' from step 5 on; the run exits 0.
    The answer was 'no known signature, restart once'; now the NaN loss (data: hand the run to its owner)."""
    d = _diagnose(FIX / "r19_silent_nan_loss")
    hit = d.primary_hit()
    assert hit is not None and hit.signature_id == "nan_loss", d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_the_rank_out_of_step_in_a_collective_mismatch_is_the_one_that_took_another_path() -> None:
    """r08: rank 1 skipped a metric all-reduce at step 20 (a rank-dependent branch), so its next collective met its
    peers' metric all-reduce; gloo aborted rank 0 (size mismatch), torchrun named rank 0, and with only the --log-dir
    tree rank 2 was named. Rank 1 logged step 20, ranks 0 and 2 stopped at step 19: it is the one out of step."""
    for path in (FIX / "r08_rank1_skips_allreduce", FIX / "r08_rank1_skips_allreduce" / "torchrun_logs"):
        d = _diagnose(path)
        assert d.category.value == "user_code" and d.first_failing_rank == 1, (path.name, d.root_cause.summary)
        assert "Rank 1 logged step 20 while every other rank stopped at step 19" in d.root_cause.summary


def test_a_gloo_interface_name_the_host_does_not_have_is_the_launch_configuration() -> None:
    """r25: GLOO_SOCKET_IFNAME=ens5 on a host without ens5; gloo's device lookup aborts every rank with 'Unable to
    find address for: ens5'. The line was the top suspect of an 'unknown' answer."""
    d = _diagnose(FIX / "r25_gloo_socket_ifname_typo")
    hit = d.primary_hit()
    assert hit is not None and hit.signature_id == "gloo_interface_not_found" and hit.details.get("iface") == "ens5"
    assert d.category.value == "config"


def test_the_same_truncated_checkpoint_on_every_rank_names_no_rank() -> None:
    """r06: both ranks failed in torch.load on the same truncated file; torchrun's table names rank 1 first. The header
    had said rank 1 over rank 0's copy of the error as the first evidence line; the file every rank reads is what they
    share: no rank is named, the summary says every rank, the first evidence line is the error itself."""
    d = _diagnose(FIX / "r06_truncated_checkpoint_every_rank")
    assert d.first_failing_rank is None and "on every rank (2)" in d.root_cause.summary, d.root_cause.summary
    assert "PytorchStreamReader" in d.root_cause.evidence[0].text
