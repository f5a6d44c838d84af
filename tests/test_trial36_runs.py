"""A new user's trial 36 (/work/trial36_inputs/REPORT.md): inputs the tool misread at first contact, each read as the
user gave it (``tests/fixtures/trial36``; real torchrun runs on this machine, and pastes from public threads)."""

from __future__ import annotations

import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial36"


def test_a_truncated_data_shard_read_by_a_load_shard_function_is_data_not_a_checkpoint() -> None:
    """r01 (torchrun, 4 ranks): rank 2's ``load_shard`` calls ``torch.load(p)`` on a data shard cut to a third;
    torch says "your checkpoint file is corrupted". It read storage, a corrupt checkpoint, the platform to restart
    from the last checkpoint: a restart fails the same way. The function the load sits in names the data."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r01_bundle"), kb=False, llm=False))
    assert d.category.value == "data" and d.first_failing_rank == 2, d.root_cause.summary
    assert d.responsible.value != "platform"


def test_a_node_whose_console_just_stops_is_the_lost_node() -> None:
    """r11 (two torchrun agents of two ranks each): node 1's agent and ranks were SIGKILLed at once; its console stops
    at step 40. Node 0's agent lost the c10d store (hosted by node 1's) and its rank 1 a connection. The answer named
    no node and restarted on the same hosts."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r11_bundle"), kb=False, llm=False))
    assert d.category.value == "infrastructure" and d.faulty_nodes == ["node1"], d.root_cause.summary
    assert d.root_cause.summary.startswith("Node node1 was lost")
    assert "on node node0" in d.root_cause.summary  # the store's loss is node 0's report
    assert d.recovery is not None and d.recovery.target_nodes == ["node1"]


def test_a_node_that_reports_its_own_failure_is_not_lost(tmp_path: Path) -> None:
    """Counter-example from the same run: node 1's console given an error of its own at its end (a CUDA error) is no
    silent node: the lost-node reading stays out."""
    job = tmp_path / "job"
    shutil.copytree(RUNS / "r11_bundle", job)
    n1 = job / "node1_console.log"
    n1.write_text(n1.read_text() + "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert not d.root_cause.summary.startswith("Node node1 was lost"), d.root_cause.summary


def test_the_one_rank_that_neither_timed_out_nor_lost_a_peer_is_the_hangs_culprit() -> None:
    """r05 without its stack dumps: ranks 1 and 3 time out in gloo, rank 0 reports "Connection closed by peer" (a
    timed-out peer's abort), rank 2's own lines end with "waiting for next batch from data service ..." and no error.
    It said "the logs do not name the rank that never joined"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r05_bundle"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 2, d.root_cause.summary
    assert "every one but rank 2" in d.root_cause.summary


def test_a_rank_that_left_no_lines_of_its_own_is_not_named(tmp_path: Path) -> None:
    """Counter-example: the same run with rank 2's own lines removed (its file left out of the paste): its silence says
    nothing, so no rank is named from it."""
    job = tmp_path / "job"
    shutil.copytree(RUNS / "r05_bundle", job)
    for p in job.rglob("*.log"):
        p.write_text("".join(ln for ln in p.read_text().splitlines(keepends=True) if "[rank2]" not in ln
                             and "[default2]" not in ln))
    for p in job.rglob("attempt_0/2/*"):
        p.unlink()
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.first_failing_rank != 2, d.root_cause.summary


def test_a_watchdog_hang_after_the_runs_own_report_of_completion_is_a_shutdown_hang() -> None:
    """r13 (modelscope/ms-swift#7992, fixed by destroying the process groups at exit): "End time of running main"
    (swift's pipeline after its run returned), PyTorch's "destroy_process_group() was not called" warnings, then the
    watchdog stuck 480 s. It said: restart from the last checkpoint -- a run that had finished."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_train.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang"
    assert d.root_cause.summary.startswith("Training had completed before this hang"), d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id == "hung_after_completion"
    assert "do not restart" in d.recovery.action


def test_the_watchdogs_own_sequence_id_report_shows_the_rank_one_collective_behind() -> None:
    """r17 (modelscope/ms-swift#5409, a hard-wrapped paste): rank 7's watchdog reports "failure detected by watchdog
    at work sequence id: 137429", rank 5 times out at WorkNCCL SeqNum 137430: rank 7 is one collective behind. Only
    rank 5's WorkNCCL was read ("1 rank(s) timed out ...; the logs do not show which rank never joined")."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r17_train.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 7, d.root_cause.summary
    assert any("different SeqNums" in f and "[7]" in f for f in d.findings), d.findings
    assert not any("Collective mismatch" in f for f in d.findings)  # a report without its op mismatches nothing


def test_a_later_attempts_earliest_worker_file_dates_the_restart() -> None:
    """r03 (torchrun --max-restarts 1 --log-dir --redirects 3): rank 1 SIGKILLed in attempt_0; in attempt_1 every
    rank failed in gloo's connectFullMesh. Rank 1's attempt_1 file began with its error 0.1 s before its peers' first
    lines, so the restart was dated by theirs and rank 1's failure "treated as teardown"."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r03_bundle"), kb=False, llm=False))
    assert d.first_failing_rank == 1 and d.category.value == "host_oom"
    assert any(f.startswith("The job was started again") and "Gloo could not connect its ranks" in f
               for f in d.findings), d.findings
    assert not any("teardown" in f for f in d.findings), d.findings


def test_an_archives_top_folder_named_after_the_case_attributes_no_file(tmp_path: Path) -> None:
    """Trial 37 (r07): ``tar czf r07.tar.gz r07_allreduce_size_mismatch_rank2`` read every file as rank 2 (the folder
    name's "rank2"), so the CLI on the folder and on its archive disagreed. A folder names a rank or a node only when
    that is all its name says (``rank3/``, ``node1/``); the same for a node token inside a case's name."""
    import tarfile

    for bundle, wrapper in (("r05_bundle", "hang_case_rank3"), ("r11_bundle", "r11_twonode_node1_lost")):
        folder = diagnose(DiagnoseRequest(path=str(RUNS / bundle), kb=False, llm=False))
        arc = tmp_path / f"{wrapper}.tar.gz"
        with tarfile.open(arc, "w:gz") as tf:
            tf.add(RUNS / bundle, arcname=wrapper)
        packed = diagnose(DiagnoseRequest(path=str(arc), kb=False, llm=False))
        assert (packed.first_failing_rank, packed.faulty_nodes, packed.category) == (
            folder.first_failing_rank, folder.faulty_nodes, folder.category), (bundle, packed.root_cause.summary)


def test_a_silent_ranks_peers_line_is_not_handed_to_the_model_as_the_first_failure() -> None:
    """Trial 38 (r07: rank 2 stuck in its checkpoint write, ranks 0, 1, 3 timed out): the first failing rank is the
    silent one, so the first evidence line is a peer's; labelled "first failure, rank 3", the model wrote "Rank 3 ...
    RuntimeError" beside the header's rank 2. The same shape here: r05's rank 2 never entered the collective."""
    from diag_service.llm import build_evidence_pack
    from diag_service.llm.config import PackConfig

    d = diagnose(DiagnoseRequest(path=str(RUNS / "r05_bundle"), kb=False, llm=False))
    assert d.first_failing_rank == 2
    first = build_evidence_pack(d, PackConfig()).items[0]
    assert first.kind == "first_failure" and "peer of rank 2" in first.label, first.label
