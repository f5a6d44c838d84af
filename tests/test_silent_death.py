"""A rank killed by a signal is the cause of its peers' lost-connection errors (real lab runs).

Fixtures are the torchrun consoles of two real 4-rank, 2-node gloo runs of the fault-injection lab
(``diag lab suite --only stop_sigkill_oom --only stop_sigkill_restart``): one rank was SIGKILLed.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures"


def test_killed_rank_beats_torchrun_root_cause_order() -> None:
    # torchrun's "Root Cause (first observed failure)" names rank 1 (SIGTERMed after it noticed the
    # closed connection, stamped a second earlier); rank 0 was the one SIGKILLed, with no traceback.
    d = diagnose(DiagnoseRequest(path=str(FIX / "lab_sigkill_root_cause_wrong")))
    assert "Root Cause (first observed failure)" in (FIX / "lab_sigkill_root_cause_wrong" / "console_node0.log").read_text()
    assert d.category.value == "host_oom"
    assert d.first_failing_rank == 0


def test_silent_rank_is_the_one_its_peers_lost() -> None:
    # After the kill torchrun restarted the group, so no agent printed the killed worker's -9 exit:
    # ranks 0, 1 and 3 report "Connection closed by peer"; rank 2 says nothing.
    d = diagnose(DiagnoseRequest(path=str(FIX / "lab_sigkill_silent_rank")))
    assert d.first_failing_rank == 2
    assert any("reports nothing of its own" in f for f in d.findings)


def test_a_restarted_groups_rendezvous_timeout_is_the_kills_consequence() -> None:
    # stop_sigkill_restart on a loaded machine (load 9-12): rank 3 SIGKILLed, torchrun restarted the group,
    # whose rendezvous then timed out ~56 s after the agent's SIGTERMs; ranks 0-2 had reported "Connection
    # closed by peer" before the restarted group's gloo timeouts. No agent printed the kill.
    d = diagnose(DiagnoseRequest(path=str(FIX / "lab_sigkill_restart_rdzv_timeout"), kb=False, llm=False))
    assert any(h.signature_id == "rendezvous_timeout" for h in d.signature_hits)
    assert any("Rendezvous timeout" in f and "treated as its consequence" in f for f in d.findings)
    assert d.failure_mode.value == "fail_stop"  # a rank died: the later timeouts are not a hang
    assert d.first_failing_rank == 3


def test_an_agents_local_rank_above_the_first_global_rank_prefix_gets_its_global_rank() -> None:
    # stop_sigkill_restart, 2 nodes of 2 (lab seed 2107, run 003): node0's local rank 1 (global 1) SIGKILLed. Node 0's
    # agent wrote "failed (exitcode: -9) local_rank: 1 (pid: 5252)" at line 18, before any "[default1]:[rank1]:"
    # prefix told its console's local-to-global offset (the restarted group's tracebacks, 50 s later); node 1's agent
    # reports its own local rank 0 (global 2). Rank 2 was named.
    d = diagnose(DiagnoseRequest(path=str(FIX / "lab_sigkill_restart_local_rank_only"), kb=False, llm=False))
    ev = d.root_cause.evidence[0]
    assert "local_rank: 1 (pid: 5252)" in ev.text and ev.rank == 1
    assert (d.first_failing_rank, d.faulty_nodes) == (1, ["node0"])


def test_a_rank_the_launchers_failure_report_leaves_out_exited_cleanly(tmp_path: Path) -> None:
    """Zoo dev b6_uc_early_stop_local_r2 (a real 3-rank torchrun run): rank 2 stops early on its own validation loss
    and returns; ranks 0 and 1 read 'Connection closed by peer' and torchrun's report lists ranks 0 and 1 only. The
    world (3) comes from the launch command at the top of the console."""
    import shutil

    job = tmp_path / "job"
    shutil.copytree(Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b6_uc_early_stop_local_r2", job)
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.first_failing_rank == 2
    assert d.category.value == "user_code" and d.confidence < 0.5
    assert any("exit code 0" in f for f in d.findings)
    # the SIGKILLed rank of the lab's runs is not read that way (its exit is reported, or the group restarted)
    d = diagnose(DiagnoseRequest(path=str(FIX / "lab_sigkill_silent_rank")))
    assert not any("exit code 0" in f for f in d.findings)
    # nor is a paste whose failure report was cut (rank 1's entry missing: the missing rank may have been killed)
    text = (job / "console.log").read_text()
    start = text.index("Failures:\n[1]:")
    end = text.index("-" * 60, start + 10)
    (job / "console.log").write_text(text[:start] + "Failures:\n  <NO_OTHER_FAILURES>\n" + text[end:])
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert not any("exit code 0" in f for f in d.findings)


def test_the_launch_command_gives_the_jobs_size() -> None:
    from diag_service.extract.events import launch_world

    assert launch_world("$ torchrun --nproc-per-node 3 --master-port 32269 train.py\n") == 3
    assert launch_world("+ torchrun --nnodes=2 --nproc_per_node=4 --rdzv-backend c10d train.py\n") == 8
    assert launch_world("python -m torch.distributed.run --nnodes 1:4 --nproc_per_node 8 train.py\n") is None
    assert launch_world("accelerate launch --multi_gpu --num_processes 4 train.py\n") == 4
    assert launch_world("torchrun train.py --epochs 3\n") is None
