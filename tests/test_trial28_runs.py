"""A new user's trial 28 (/work/trial28_inputs/REPORT.md): real gloo/CPU runs the tool got partly right, misled on or
got wrong at first contact, each read from the run's own bundle (``tests/fixtures/trial28``, as the user judged it)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial28"


def test_a_completion_before_the_launcher_started_again_is_the_earlier_attempts() -> None:
    """r02 (torchrun --tee, one file): attempt 1 trained 200 steps and logged "training finished"; torchrun was started
    again (a second start banner) to resume from a last.pt cut to 60 %, and every rank failed to read it. It read
    "Training had completed before this failure ... it failed at shutdown ... do not re-run the training", L0."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r02_job.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_stop", "storage"), d.root_cause.summary
    assert "completed before this failure" not in d.root_cause.summary and d.recovery.level.value != "L0"


def test_a_file_that_began_after_another_finished_is_a_later_attempt_not_a_peer() -> None:
    """r03 (accelerate, .tar.gz of attempt1.log and attempt2.log): attempt 1 finished; attempt 2's resume failed on every
    rank (torch.load's weights_only refusal). It opened with "that rank or node finished its loop and left while its
    peers were still training ... The ranks disagree on how many steps to run"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r03.tar.gz"), kb=False, llm=False))
    assert d.category.value == "config" and d.first_failing_rank is None, d.root_cause.summary
    assert "disagree on how many steps" not in d.root_cause.summary
    assert not any("disagree on how many steps" in f for f in d.findings)


def test_a_frozen_nodes_hang_is_not_read_from_its_agents_store_timeout_after_the_peer_exited() -> None:
    """r10 (two torchrun agents, .zip): node1 (agent and rank 1) frozen by the cgroup freezer at step ~20; rank 0 timed
    out in its recv after 40 s and node0's agent exited with the c10d store; thawed, node1's agent failed its
    keep-alive ("has failed to send a keep-alive heartbeat to the rendezvous ... RendezvousConnectionError"). It read
    fail_stop, config, "Most often the launch itself: MASTER_ADDR/MASTER_PORT", L4."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10.zip"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert d.category.value != "config" and "MASTER_ADDR" not in d.root_cause.summary


def test_an_evaluation_every_few_steps_that_takes_most_of_the_run_is_a_config_slowdown() -> None:
    """r13 (mp.spawn, one file): `eval_every: 5` (meant 500): 59 evaluations, each logged "eval step N ... in 2.3s",
    took 60 % of the run; the step lines every 10 steps state only the training step's own time. It read "No failure
    in these logs" (and `diag slow`: NOT JUDGED, too few steps for a baseline)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_train.out"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "config"), d.root_cause.summary
    assert "periodic pass" in d.root_cause.summary


def test_a_prefetch_threads_death_on_a_truncated_npy_file_is_a_data_hang() -> None:
    """r09 (mp.spawn, folder with the output and 3 py-spy snapshots): rank 1's prefetch thread died on numpy's "Failed
    to read all data for array ... (file seems not fully written?)"; its main thread blocked on the queue and rank 0
    timed out. The story (a thread died first) was right, but its category came from another rule on the same line
    ("A library refused a value it was given": config)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r09"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_hang", "data", 1), d.root_cause.summary
    assert "A thread of the job died first" in d.root_cause.summary


def test_the_exited_ranks_own_uncatalogued_exception_leads_over_a_peers_lost_connection() -> None:
    """r07 (node1's last 60 lines pasted): rank 3's DataLoader worker raised "max(): Expected reduction dim to be
    specified for input.numel() == 0" on an empty sample; rank 2 then read "Connection closed by peer". It answered
    "Suspected: Connection reset / refused / closed by peer" with the real error third."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r07_stdin.txt"), kb=False, llm=False))
    assert d.first_failing_rank == 3 and "Suspected: Connection reset" not in d.root_cause.summary
    assert "Expected reduction dim" in d.root_cause.evidence[0].text


def test_a_rank_waiting_on_a_child_process_is_told_so_not_just_in_its_own_code() -> None:
    """r20 (two agents, .tar.gz of node logs + one py-spy snapshot): rank 1's pre-evaluation hook ran a command
    (standing for `stat` on a dead NFS mount) with subprocess.run; rank 0 timed out. It said "stuck outside any
    collective in the job's own code (train (pcls.py:173))", although the rank waits for its child process."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r20.tar.gz"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert "waiting for a child process it started" in d.root_cause.summary
