"""A new user's trial 32 (/work/trial32_inputs/REPORT.md): real gloo/CPU runs and public-thread logs the tool misled
on or got partly right at first contact, each read as the user gave it (``tests/fixtures/trial32``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial32"


def test_a_report_of_this_tool_saved_beside_the_logs_is_not_read_as_a_log(tmp_path: Path) -> None:
    """r12 (two agents, rank 2's KeyError): `diag diagnose DIR > DIR/diag_report.txt`, then the same command again,
    read the saved report's quoted evidence and explanations as log lines and answered "Corrupt or truncated
    checkpoint" (storage, 0.53). The tool's own reports (text and JSON) are skipped with a warning."""
    bundle = tmp_path / "x12"
    shutil.copytree(RUNS / "r12_bundle", bundle)
    first = diagnose(DiagnoseRequest(path=str(bundle), kb=False, llm=False))
    shutil.copy(RUNS / "r12_saved_report.txt", bundle / "diag_report.txt")
    shutil.copy(RUNS / "r12_saved_report.json", bundle / "diag_report.json")
    again = diagnose(DiagnoseRequest(path=str(bundle), kb=False, llm=False))
    assert (again.category, again.first_failing_rank) == (first.category, first.first_failing_rank) \
        == (first.category, 2), again.root_cause.summary
    assert again.category.value == "user_code"
    skipped = [w for w in again.input.warnings if "report of this tool" in w]
    assert len(skipped) == 2


def test_an_option_value_argparse_refused_is_the_launch_config() -> None:
    """r13 (torchrun --tee 3, `--batch-size 32k`): every rank prints "train.py: error: argument --batch-size: invalid
    int value: '32k'" and exits 2. It read unknown ("failed in set-up"), the argparse line only a suspicious event."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_console.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_stop", "config"), d.root_cause.summary


def test_a_watchdog_line_cut_inside_its_words_is_still_the_watchdogs_timeout() -> None:
    """i05 (hiyouga/LlamaFactory#8261): the paste ends "[Rank 5] Watchdog caught collective operati" after 24 tqdm
    steps. It read "the logs end without an error" (L0); it is the NCCL watchdog's collective timeout."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "i05_issue.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert "nccl_watchdog_timeout" in {h.signature_id for h in d.signature_hits}


def test_a_missing_data_shard_is_data_not_a_checkpoint_race() -> None:
    """r17 (two agents, node1's console): rank 2's `open(f"{args.data_dir}/shard-{step:05d}.pt", "rb")` raises
    FileNotFoundError. It read "Checkpoint path missing on this rank (save/rotate race)": a ".pt" path is no
    checkpoint by itself; the read's own names say it is a data shard."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r17_console_node1.log"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("data", 2), d.root_cause.summary
    assert "checkpoint" not in d.root_cause.summary.split(".")[0].lower()


def test_a_culprit_that_left_no_dump_is_not_sent_to_its_frame() -> None:
    """r18 (two agents, 4 ranks): rank 1 SIGSTOPped for good; the Flight Recorder dumps of ranks 0, 2 and 3 say rank 1
    never joined all_reduce #73 and "left no Flight Recorder dump (process gone or unresponsive)", and py-spy could not
    read the stopped process. The action said "fix or clear that first (the culprit's frame above)": there is no frame.
    It now sends the engineer to that rank's node and process state."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r18_bundle.tar.gz"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id == "hang_ended_culprit_silent"
    assert "frame above" not in d.recovery.action
