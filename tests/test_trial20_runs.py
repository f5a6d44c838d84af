"""A new user's seventh trial on real runs (trial 20, 19 gloo/CPU runs recorded on the lab host, after trial 19's fixes):
each test keeps one run's bundle (``tests/fixtures/trial20``) and what the user found wrong with the answer."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).parent / "fixtures" / "trial20"


def test_a_checkpoint_name_too_long_is_the_jobs_configuration_not_the_volume() -> None:
    """r08 (torchrun --tee, .tar.gz): the checkpoint's name was built from every HP_* setting, over 255 bytes; torch.save
    failed with "open file failed with strerror: File name too long" and the answer was storage, "resume ... once the
    volume is fixed", an L2 restart that fails the same way."""
    d = diagnose(DiagnoseRequest(path=str(FIX / "r08_ckpt_name_too_long" / "bundle.tar.gz"), kb=False, llm=False))
    assert d.category.value == "config" and d.first_failing_rank == 0, d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_no_space_while_creating_a_dataloader_semaphore_is_the_shared_memory() -> None:
    """r03 (two agents, per-node files): node1's /dev/shm is a 64 kB tmpfs and its DataLoader workers' queues fail in
    multiprocessing.SemLock with "OSError: [Errno 28] No space left on device"; the answer said "typically while saving
    a checkpoint ... df -h" and to free old checkpoints."""
    d = diagnose(DiagnoseRequest(path=str(FIX / "r03_shm_full_node1"), kb=False, llm=False))
    assert d.category.value == "storage" and d.faulty_nodes == ["node1"], d.root_cause.summary
    assert d.root_cause.summary.startswith("No space left on /dev/shm"), d.root_cause.summary


def test_a_finished_runs_stragglers_of_a_few_milliseconds_are_a_finding() -> None:
    """r16 (two agents, per-node files + a timing feed; a near-clean run whose intended leak cost <= 0.4 ms per step):
    data medians of 0.9-1.0 ms on both ranks, and the answer was fail_slow, storage, "Rank 0 on node0 is a persistent
    data straggler (4.00x ...)". Its costliest straggler cost under 5 % of a finished run: the run's verdict stays
    "finished" (since trial 21 both ranks' alike flags are no straggler at all: docs/slow.md, "Every rank flagged
    alike")."""
    d = diagnose(DiagnoseRequest(path=str(FIX / "r16_graph_leak_straggler_rank1_node1"), kb=False, llm=False))
    assert d.failure_mode.value == "none" and d.first_failing_rank is None, d.root_cause.summary
    assert not any("straggler" in f and "of the run's time" not in f for f in d.findings), d.findings


def test_a_finished_runs_slowdown_of_a_fraction_of_a_second_is_a_finding() -> None:
    """r01 (torchrun --tee, one file; a clean control with an evaluation and a checkpoint at steps 150 and 300 on a shared
    host): 4.0 -> 5.6 ms/it over the last 100 of 384 steps read fail_slow, "who acts: the platform", "costing 0.144s".
    A finished run's slowdown that cost it under a second in all is a finding; the run's verdict stays "finished"."""
    d = diagnose(DiagnoseRequest(path=str(FIX / "r01_clean_torchrun_eval_ckpt" / "job.log"), kb=False, llm=False))
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert any("too little to be the run's failure" in f for f in d.findings), d.findings


def test_a_finished_runs_slowdown_of_seconds_stays_its_verdict() -> None:
    """The counterpart, a zoo dev run (a profiler left on from step 160: 1.58x, 1.8 s of a finished run's time): real
    seconds lost stay the run's fail_slow verdict."""
    run = Path(__file__).parents[1] / "eval" / "zoo" / "runs" / "b9_slow_uc_profiler_left_on"
    d = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow", d.root_cause.summary
