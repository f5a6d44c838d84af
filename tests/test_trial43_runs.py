"""A new user's trial 43 (/work/trial43_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial43``: real runs recorded on this machine)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial43"


def test_a_hyperparameter_that_does_not_parse_is_the_configs_not_the_datas() -> None:
    """r09b (Ray Train TorchTrainer, 2 CPU workers): worker 1's learning rate comes from train_loop_config's
    lr_schedule[rank] = "1e-2,warmup=100" and ``lr = float(sched)`` raises "could not convert string to float". It was
    read as a bad row of the input data ("a bad row or file in the input"); the value is the job's configuration."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r09b_ray_driver.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_stop", "config", 1)
    assert "A setting the job read does not parse" in d.root_cause.summary


def test_a_broken_pipe_to_a_store_that_shut_down_names_no_rank() -> None:
    """r20 (qibin0506/Cortex #17, a part of a torchrun log): ranks 1 and 3's heartbeat monitors report 'Failed to check
    the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe' and
    the store client's 'sendBytes failed ... Broken pipe': after-effects of the store's host having exited. They were
    read as a connection reset of rank 3's own ("first failing rank 3")."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r20_store_gone_train.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_stop", "unknown", None)
    assert "The c10d store had already shut down" in d.root_cause.summary


def test_a_net_ofi_completion_error_is_not_called_an_aws_efa_fault() -> None:
    """r15 (NVIDIA/nccl #1928, an HPE/Cray system): "NET/OFI Request ... completed with error. RC: 113. Error: 2
    (UNDELIVERABLE)" through the aws-ofi-nccl plugin, whose libfabric provider there is not EFA. The answer said
    "EFA (libfabric) reported ..." and sent the reader to the instances' EFA devices and security group."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r15_ofi_undeliverable.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_stop", "network")
    assert not d.root_cause.summary.startswith("EFA")
    assert "another provider through NET/OFI" in d.root_cause.summary and "cxi" in d.root_cause.summary
