"""A new user's trial 35 (/work/trial35_inputs/REPORT.md): inputs the tool misread at first contact, each read as the
user gave it (``tests/fixtures/trial35``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial35"


def test_hccls_socket_timeout_is_a_wait_for_a_stuck_peer_not_a_set_up_failure() -> None:
    """r12 (vllm-project/vllm-ascend#486, GRPO on Ascend NPUs): rank 1's HcclAllreduce failed with EI0006 "Getting
    socket times out. Reason: Remote Rank did not send the data in time". It read a fail_stop of rank 1 in set-up
    ("stop ... do not start it again"); rank 1 waited for a stuck peer."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r12_hccl.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert "ascend_hccl_socket_timeout" in {h.signature_id for h in d.signature_hits}
    assert d.recovery is not None and d.recovery.rule_id != "failed_before_training"


def test_two_ranks_watchdog_reports_run_together_on_one_line_are_two_reports() -> None:
    """r13 (hiyouga/LlamaFactory#2902, a quoted comment): a tqdm bar's carriage returns joined the progress and both
    ranks' watchdog reports into one line: rank 0 timed out at SeqNum 1516, rank 1 at 1517. Only rank 0's was read,
    so that the ranks were one collective apart was lost."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r13_comment.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang"
    assert any("different SeqNums" in f and "[0]" in f for f in d.findings), d.findings
