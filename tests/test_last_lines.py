"""Each rank's last ordinary lines (``ProgressLog.last_lines``, read by the extractor from each block's tail), and the
finding that tells them beside a verdict naming a rank without its own error."""

from __future__ import annotations

from pathlib import Path

from diag_service.contracts import ProgressLog
from diag_service.extract.events import extract_events
from diag_service.ingest.open import Bundle
from diag_service.pipeline import DiagnoseRequest, diagnose

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs"


def _progress(text: str, name: str = "console.log") -> ProgressLog:
    progress = ProgressLog()
    list(extract_events(list(Bundle.from_text(text, name).blocks()), progress))
    return progress


def test_last_lines_stop_at_a_ranks_own_failure_and_skip_its_traceback() -> None:
    """In one console with rank prefixes: rank 0's lines after its traceback began are its failure's report, not its
    work; rank 1's last two lines are kept, oldest first, with their line numbers."""
    log = "\n".join([
        "[rank0]: step 10 loss 2.1",
        "[rank1]: step 10 loss 2.2",
        "[rank1]: saving checkpoint to /ckpt/step_10",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "train.py", line 3, in <module>',
        "[rank0]: RuntimeError: Timed out waiting 30000ms for recv operation to complete",
        "[rank1]: writing shard 3 of 8",
    ]) + "\n"
    p = _progress(log)
    assert [(n, t) for _f, n, _ts, t in p.last_lines[1]] == [
        (2, "step 10 loss 2.2"), (3, "saving checkpoint to /ckpt/step_10"), (7, "writing shard 3 of 8")]
    assert [t for *_x, t in p.last_lines[0]] == ["step 10 loss 2.1"]


def test_a_rank_killed_while_saving_is_told_with_its_last_line() -> None:
    """A real run (zoo dev, torchrun --log-dir): rank 1 SIGKILLed during a distributed checkpoint save, no traceback of
    its own; its last line says it was saving."""
    d = diagnose(DiagnoseRequest(path=str(ZOO / "b16_inf_sigkill_dcp_save_r1"), kb=False, llm=False))
    told = [f for f in d.findings if f.startswith("Rank 1's last lines")]
    assert d.first_failing_rank == 1 and told and "saving checkpoint to ckpt/step_000100" in told[0], d.findings


def test_a_rank_with_its_own_traceback_gets_no_last_lines_finding() -> None:
    """The counter-example: a rank that raised its own exception (zoo dev, a NaN guard raising on rank 1 of four) is
    explained by its traceback; its last lines are not told."""
    runs = sorted(p.name for p in ZOO.iterdir() if p.name.startswith("b22_") or p.name.startswith("b21_"))
    for name in runs:
        d = diagnose(DiagnoseRequest(path=str(ZOO / name), kb=False, llm=False))
        if d.failure_mode.value == "fail_stop" and d.first_failing_rank is not None and any(
                e.kind.value == "traceback" and d.first_failing_rank in e.ranks for e in d.events):
            assert not any("last lines of its own" in f for f in d.findings), (name, d.findings)
            return
    raise AssertionError(f"no fail_stop run with its rank's own traceback among {runs}")
