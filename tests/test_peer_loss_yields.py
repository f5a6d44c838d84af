"""A rank's report of a lost peer yields to the peer's own failure (a real 2-rank torchrun run).

Fixture ``lab_user_raise_peer_closed``: ``torchrun --nproc-per-node 2 --tee 3`` of ``train.py.txt`` (gloo, CPU)
on this machine type. Rank 1 raises a plain ``RuntimeError`` from the script's own check at step 40; rank 0,
inside DDP's backward all-reduce, gets gloo's "Connection closed by peer". No line carries its own time
stamp, so both tracebacks borrow torchrun's start-up warning's time: order cannot decide.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "lab_user_raise_peer_closed"


def _diagnose(tmp_path: Path, text: str):
    (tmp_path / "console.log").write_text(text)
    return diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))


def test_the_job_raising_is_the_cause_not_the_peer_that_lost_it() -> None:
    d = diagnose(DiagnoseRequest(path=str(FIX / "console.log"), kb=False, llm=False))
    assert d.category.value == "user_code"
    assert d.first_failing_rank == 1
    assert d.root_cause.evidence[0].rank == 1
    assert "batch validation failed" in d.root_cause.evidence[0].text
    assert "RuntimeError raised by the job's own code" in d.root_cause.summary
    assert "Connection reset / refused / closed by peer" in d.root_cause.summary.split("Cascade:")[1]


def test_a_library_runtime_error_stays_unnamed_but_is_still_the_suspect(tmp_path: Path) -> None:
    # The same run as if the RuntimeError came from inside a library: no category, but the suspect and the
    # evidence are rank 1's own error, not rank 0's lost connection.
    text = (FIX / "console.log").read_text().replace(
        'File "/tmp/trial/train.py", line 6, in check_batch',
        'File "/usr/lib/python3.11/site-packages/somelib/checks.py", line 6, in check_batch')
    d = _diagnose(tmp_path, text)
    assert d.category.value == "unknown"
    assert "Suspected: Unclassified RuntimeError in the job" in d.root_cause.summary
    assert d.root_cause.evidence[0].rank == 1 and "batch validation failed" in d.root_cause.evidence[0].text


def test_a_lost_peer_alone_still_names_the_network(tmp_path: Path) -> None:
    # Without rank 1's traceback the lost connection is all there is: it keeps its place.
    lines = [ln for ln in (FIX / "console.log").read_text().splitlines() if not ln.startswith("[default1]:")]
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert any(h.signature_id == "connection_reset" for h in d.signature_hits)
    assert "Suspected: Connection reset / refused / closed by peer" in d.root_cause.summary
