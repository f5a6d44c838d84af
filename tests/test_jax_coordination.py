"""JAX multi-host failures as the coordination service of jax.distributed reports them (XLA's
coordination_service.cc): public corpus dev cases, and what the service's messages do and do not say."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from diag_service.domain import Diagnosis
from diag_service.pipeline import DiagnoseRequest, diagnose

Case = Callable[[str], Diagnosis]


def test_a_barrier_that_tasks_never_reached_is_a_hang(corpus_dev_case: Case) -> None:
    # levanter#432: "Barrier timed out. Barrier_id: multihost_broadcast_sync0. Timed out task names:" then two tasks
    d = corpus_dev_case("n9a-010")
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "unknown")
    assert any(h.signature_id == "jax_barrier_timeout" for h in d.signature_hits)


@pytest.mark.parametrize(("cid", "rank", "signature"), [
    # the coordinator: "task:1 unexpectedly tried to connect with a different incarnation. It has likely restarted."
    ("n7-014", 1, "jax_task_restarted"),
    # the coordinator: "task:37 has been set to ERROR ... Task .../task:37 heartbeat timeout"
    ("n7-011", 37, "jax_task_heartbeat_timeout"),
])
def test_the_task_the_coordinator_names_failed_first(cid: str, rank: int, signature: str, corpus_dev_case: Case) -> None:
    d = corpus_dev_case(cid)
    assert d.failure_mode.value == "fail_stop" and d.first_failing_rank == rank
    assert d.category.value == "unknown"  # the service says which task failed, not why
    assert any(h.signature_id == signature for h in d.signature_hits)


def test_a_register_deadline_is_named_but_decides_no_category(tmp_path: Path, corpus_dev_case: Case) -> None:
    # the same start-up message had a firewall-blocked port
    # (framework, n9a-009) and an overloaded coordinator (infrastructure, n7-015) as causes
    for cid in ("n9a-009", "n7-015"):
        d = corpus_dev_case(cid)
        assert d.category.value == "unknown"
        assert any(h.signature_id == "jax_register_task_deadline" for h in d.signature_hits)


def test_the_unhealthy_tasks_notice_does_not_name_its_reader(tmp_path: Path) -> None:
    # every surviving task reads the service's notice; the reader (rank 2 here) did not fail
    log = tmp_path / "task2.log"
    log.write_text(
        "[rank2]: jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: The following tasks are unhealthy (stopped "
        "sending heartbeats):\n[rank2]: /job:jax_worker/replica:0/task:5\n"
        "[rank2]: The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. "
        "preemption, eviction) to debug further.\n")
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.first_failing_rank != 2
