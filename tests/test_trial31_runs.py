"""A new user's trial 31 (/work/trial31_inputs/REPORT.md): real gloo/CPU runs and public-thread logs the tool misled on
or got partly right at first contact, each read as the user gave it (``tests/fixtures/trial31``)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial31"


def test_a_sigkill_after_the_grace_period_is_the_agents_teardown_not_a_host_oom() -> None:
    """g04 (vllm-project/speculators#1115): torchelastic's table has ranks 1 and 3 exiting with code 1 at 13:02:58,
    rank 2 SIGTERMed and rank 0 SIGKILLed at 13:03:29, 31 s later: the agent's stop of the remaining workers (SIGTERM,
    then SIGKILL after its 30 s grace period). It read "Process killed (SIGKILL) on rank 0" as a host OOM. The first
    observed failure, rank 1, leads; its exit code 1 alone names no category."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "g04_issue.log"), kb=False, llm=False))
    assert d.first_failing_rank == 1, d.root_cause.summary
    assert d.category.value != "host_oom"
    assert any("grace period" in f for f in d.findings)


def test_a_truncated_data_shard_is_data_not_a_checkpoint(tmp_path: Path) -> None:
    """r07 (torchrun, 3 ranks): rank 1's torch.load of its data shard ("data = torch.load(shard)") fails with
    "PytorchStreamReader failed reading zip archive", whose text speaks of a checkpoint. It read "Corrupt or truncated
    checkpoint ... Resume from the previous complete checkpoint". The load call's own names say it is the data."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r07_run.log"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("data", 1), d.root_cause.summary
    resume = tmp_path / "resume.log"
    resume.write_text((RUNS / "r07_run.log").read_text().replace("data = torch.load(shard)",
                                                                 "state = torch.load(args.resume)"))
    d2 = diagnose(DiagnoseRequest(path=str(resume), kb=False, llm=False))
    assert d2.category.value == "storage", d2.root_cause.summary


def test_a_learning_rate_read_from_yaml_as_a_string_is_config() -> None:
    """r09 (accelerate launch, 2 processes): the YAML recipe's "lr: 3e-4" loads as a string (YAML 1.1 floats need a
    dot), and AdamW's "0.0 <= lr" raises "'<=' not supported between instances of 'float' and 'str'" inside
    torch.optim on both ranks. It read a framework bug; the job's own config passed a string."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r09_logs"), kb=False, llm=False))
    assert d.category.value == "config", d.root_cause.summary
    assert d.failure_mode.value == "fail_stop"


def test_a_rank_whose_own_compute_time_grew_is_named_from_its_step_lines() -> None:
    """r06 (torchrun --log-dir, 2 ranks): from step 120 rank 1's lines say "compute 82.0 ms allreduce 12.8 ms" and rank
    0's "compute 1.9 ms allreduce 93.7 ms" (it waits for rank 1 in the all-reduce). It read "300 records, 0 ranks", a
    job-wide slowdown "from step 38" and no straggler: the lines' compute and communication split was not read per
    rank, and the baseline, trimmed of its slow steps only, sat below the job's level."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06_bundle.tar.gz"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary
    assert d.first_failing_rank == 1
    assert d.slow is not None and d.slow.stragglers and d.slow.stragglers[0].rank == 1
    assert d.slow.job_slowdown and d.slow.job_slowdown[0].start_step >= 110


def test_a_memory_cgroups_oom_report_without_its_failcnt_is_the_memory_limit(tmp_path: Path) -> None:
    """g09 (RadFM#30): mp.spawn's "process 2 terminated with signal SIGKILL" and the kernel's memory-cgroup OOM report
    "memory+swap: usage 117964800kB, limit 117964800kB" (cgroup v1, the paste stops before failcnt). It read the
    SIGKILL alone (host_oom at 0.38, "check dmesg"): the line that proves it was not known."""
    log = tmp_path / "issue.log"
    log.write_text("torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGKILL\n"
                   "memory+swap: usage 117964800kB, limit 117964800kB\n")
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.category.value == "host_oom" and d.confidence >= 0.5, d.root_cause.summary
    assert d.primary_hit() is not None and d.primary_hit().signature_id == "vk_scheduler_memlimit"


def test_the_watchdogs_own_abort_is_not_the_hangs_suspect() -> None:
    """g11 (verl#1158): ranks time out in an ALLTOALL (the NCCL watchdog's "Watchdog caught collective operation
    timeout") and torchelastic reports "exitcode: -6": the watchdog takes a timed-out rank down with SIGABRT. It read
    "Suspected: Process aborted (SIGABRT)", the hang's consequence named as its suspect."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "g11_issue.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert "Suspected: Process aborted" not in d.root_cause.summary
