"""A new user's trial 42 (/work/trial42_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial42``: real runs recorded on this machine and pastes from public issue threads)."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from diag_service.ingest.envelope import sniff_indent
from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial42"
ROOT = Path(__file__).resolve().parents[1]


def test_notes_beside_the_logs_are_not_evidence_but_a_notes_file_given_itself_is_read(tmp_path: Path) -> None:
    """g07 (ms-swift #6301, a pasted torchrun exit -6 of local_rank 0): the trial's SOURCE.md, beside the log, quotes
    the thread's title ("CUDA out of memory in 4 nodes ...") and made the answer gpu_oom 0.89 with SOURCE.md:6 as the
    only evidence; the paste itself shows only a SIGABRT. On-call engineers put ticket text beside the logs they hand
    over. Inside a folder or an archive a Markdown file is skipped with a warning; given itself, it is read."""
    folder = RUNS / "g07_notes_beside_log"
    d = diagnose(DiagnoseRequest(path=str(folder), kb=False, llm=False))
    assert d.category.value != "gpu_oom", d.root_cause.summary
    assert not any(e.file.endswith("SOURCE.md") for e in d.root_cause.evidence)
    assert any("SOURCE.md: a prose document" in w for w in d.input.warnings), d.input.warnings
    alone = diagnose(DiagnoseRequest(path=str(folder / "issue.log"), kb=False, llm=False))
    assert (d.category, d.failure_mode) == (alone.category, alone.failure_mode)
    archive = tmp_path / "g07.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname="g07")
    assert diagnose(DiagnoseRequest(path=str(archive), kb=False, llm=False)).category == d.category
    notes = tmp_path / "ticket.md"
    shutil.copy(folder / "SOURCE.md", notes)
    read = diagnose(DiagnoseRequest(path=str(notes), kb=False, llm=False))
    assert not any("prose document" in w for w in read.input.warnings)
    assert read.input.lines > 0


def test_a_plan_after_the_launchers_own_restarts_failed_is_not_restart_as_it_is() -> None:
    """r02 (torchrun --nproc-per-node 8 --max-restarts 2, --log-dir --tee 3): rank 5 SIGKILLed at step 15, then both
    of torchrun's restarts failed connecting Gloo at set-up (attempt_1, attempt_2). The diagnosis saw the later
    attempts fail ("that attempt failed too"), yet the plan was the bare kill's "restart from the last checkpoint as
    it is": the in-place restart is spent, so the plan is a fresh launch after both causes are dealt with."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r02_restarts_failed"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_stop", "host_oom", 5)
    assert any("that attempt failed too" in f for f in d.findings), d.findings
    assert d.recovery is not None and (d.recovery.rule_id, d.recovery.level.value) == ("restart_failed_again", "L2")
    assert "as it is will not do" in d.recovery.action
    # torchelastic logs its SIGTERMs to the other workers before the killed one's "failed (exitcode: -9)": teardown,
    # not a precursor of the kill
    assert "Preceded by" not in d.root_cause.summary and "Process terminated" in d.root_cause.summary
    # the console alone shows no second attempt: the bare kill's plan stands
    alone = diagnose(DiagnoseRequest(path=str(RUNS / "r02_restarts_failed" / "console.log"), kb=False, llm=False))
    assert alone.recovery is not None and alone.recovery.rule_id == "unconfirmed_kill_restart"


def test_a_log_pasted_as_an_indented_block_reads_as_the_log_itself(tmp_path: Path) -> None:
    """A log pasted as an indented block (Markdown's four-space code block; trial 42's g03 paste had every line
    indented) hid the ``[rankN]:`` prefixes at the line's start: zoo dev b49_cfg_hsdp_mesh_smaller_than_world's console,
    indented by four spaces, read ``unknown`` (its traceback's frames not found) where the console reads an exception
    inside a library on rank 2. A paste that starts inside a traceback keeps its frames' indentation."""
    console = ROOT / "eval" / "zoo" / "runs" / "b49_cfg_hsdp_mesh_smaller_than_world" / "console.log"
    plain = diagnose(DiagnoseRequest(path=str(console), kb=False, llm=False))
    pasted = tmp_path / "pasted.log"
    pasted.write_text("".join("    " + line for line in console.read_text().splitlines(keepends=True)))
    d = diagnose(DiagnoseRequest(path=str(pasted), kb=False, llm=False))
    assert (d.category, d.first_failing_rank) == (plain.category, plain.first_failing_rank) == (plain.category, 2)
    assert d.category.value != "unknown"
    frames = tmp_path / "frames.log"  # a paste that starts inside a traceback: frames at the least indentation
    frames.write_bytes(b'  File "/home/user/proj/train.py", line 60, in main\n    fully_shard(block, mesh=mesh)\n')
    assert sniff_indent(frames.read_bytes()) == 0 and sniff_indent(pasted.read_bytes()[:4096]) == 4


def test_the_first_failing_ranks_node_comes_from_slurms_report_of_its_task() -> None:
    """r04 (srun -l -N2 --ntasks-per-node=4, one task per rank): rank 6's truncated shard; its traceback lines carry
    only srun's "6: " prefix, and Slurm's "srun: error: gpu-node02: task 6: Exited with exit code 1" is the one line
    that places task 6. The rank was named, its node (gpu-node02) was not."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r04_srun_l"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank, d.first_failing_node) == ("data", 6, "gpu-node02")


def test_torchelastic_attempt_folders_are_the_jobs_restarts_and_three_without_progress_are_a_storm(
        tmp_path: Path) -> None:
    """r02's --log-dir holds attempt_0 (trained to step 14, killed), attempt_1 and attempt_2 (both failed in set-up):
    two restarts, neither got past the first attempt's steps. The diagnosis' ``restarts`` was null (only a live job's
    agents counted restarts), so the policy's restart-storm rule could never fire on a bundle. With a third failed
    attempt (attempt_2's files again as attempt_3) the job has restarted three times without progress: stop
    restarting (policy history.storm_restarts = 3)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r02_restarts_failed"), kb=False, llm=False))
    assert d.restarts is not None and d.restarts.source == "logs"
    assert (d.restarts.count, d.restarts.without_progress) == (2, 2)
    assert d.recovery is not None and d.recovery.rule_id == "restart_failed_again"
    storm = tmp_path / "r02_storm"
    shutil.copytree(RUNS / "r02_restarts_failed", storm)
    run = next((storm / "torchrun_logs").iterdir())
    shutil.copytree(run / "attempt_2", run / "attempt_3")
    d = diagnose(DiagnoseRequest(path=str(storm), kb=False, llm=False))
    assert d.restarts is not None and (d.restarts.count, d.restarts.without_progress) == (3, 3)
    assert d.recovery is not None and (d.recovery.rule_id, d.recovery.level.value) == ("restart_storm", "L4")
    # one attempt only (the console alone): no restarts are claimed
    alone = diagnose(DiagnoseRequest(path=str(RUNS / "r02_restarts_failed" / "console.log"), kb=False, llm=False))
    assert alone.restarts is None


def test_an_attempt_that_trains_past_the_earlier_ones_ends_the_run_of_restarts_without_progress() -> None:
    """Attempt 1 resumed and trained past attempt 0's last step (a restart that worked); attempts 2 and 3 then each
    stopped at or below that step: two restarts in a row without progress, not three. A configuration banner's
    "steps=60" read first as a step does not count as how far a stream got."""
    from diag_service.contracts import ProgressLog
    from diag_service.localize.attempts import restarts_from_logs

    p = ProgressLog()
    runs = "logs/none_x/attempt_{}/0/stderr.log"
    for a, steps in enumerate([(60, 1, 10), (60, 11, 25), (60, 21, 25), (60, 21, 24)]):
        for i, s in enumerate(steps):
            p.add((runs.format(a), 0, None), 1000.0 * a + i, s)  # (as the extractor records a timed step line)
            p.file_last_step[runs.format(a)] = s
    got = restarts_from_logs(p, [runs.format(a) for a in range(4)])
    assert got is not None and (got.count, got.without_progress, got.highest_step) == (3, 2, 25)
    assert got.first_time == 2000.0 and got.last_time == 3000.0
    assert restarts_from_logs(p, [runs.format(0)]) is not None  # attempts seen through their step lines too
    untimed = ProgressLog()  # step lines without a time ("rank 2: step 50/100 loss 1.74") count as well
    untimed.file_last_step.update({runs.format(0): 56, runs.format(1): 50})
    got = restarts_from_logs(untimed, [])
    assert got is not None and (got.count, got.without_progress, got.first_time) == (1, 1, None)
    assert restarts_from_logs(ProgressLog(), ["logs/none_x/attempt_0/0/stderr.log"]) is None
