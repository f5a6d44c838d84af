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
