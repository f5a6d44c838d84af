"""A new user's trial 42 (/work/trial42_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial42``: real runs recorded on this machine and pastes from public issue threads)."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial42"


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
    # the console alone shows no second attempt: the bare kill's plan stands
    alone = diagnose(DiagnoseRequest(path=str(RUNS / "r02_restarts_failed" / "console.log"), kb=False, llm=False))
    assert alone.recovery is not None and alone.recovery.rule_id == "unconfirmed_kill_restart"
