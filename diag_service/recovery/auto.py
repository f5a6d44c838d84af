"""Execution of an incident's recovery plan without a person: the policy's plan, once per incident, audited.

:class:`IncidentRecovery` is handed the final diagnosis of an incident (``diag serve`` does it where a live job's
final diagnosis is announced). It computes the plan with :func:`~diag_service.recovery.recommend.recommend` over
the policy and the history (the same plan the diagnosis carries: the history returns the first plan of a
diagnosis), executes it only when the policy's ``execution`` section allows it (``live: true`` and the plan's
level in ``levels``) and the plan is due now (``timing: now``; a ``next_checkpoint`` plan is left to a person),
waits the plan's back-off first, claims the incident in the history (:meth:`History.claim_execution`: the same
incident, or the same plan, is never executed twice, across restarts too) and records the outcome in the
audit log (``executed``, ``failed`` with the exit codes, or ``refused`` with the executor's reason). The
language model has no part in it: the diagnosis's narrative is not read.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from diag_service.domain import Diagnosis, RecoveryPlan
from diag_service.recovery.history import History
from diag_service.recovery.policy import Policy
from diag_service.recovery.recommend import ExecutionRefused, Executor, recommend

log = logging.getLogger("diag_service.recovery.auto")


@dataclass
class Outcome:
    """What became of one incident's plan: ``status`` is ``executed`` (every command exited 0), ``failed`` (one
    exited non-zero, or the executor raised), ``refused`` (the executor refused the plan: a placeholder, a
    binary not allowed, too many nodes), ``duplicate`` (this incident or plan was claimed before) or
    ``skipped`` (not executed: ``reason`` says why; the plan stays a recommendation). ``lines``: the
    executor's ``"<command> -> exit N"`` lines."""

    status: str
    incident: str
    plan: RecoveryPlan | None = None
    reason: str = ""
    lines: list[str] = field(default_factory=list)


class IncidentRecovery:
    """Executes final diagnoses' plans with ``executor`` under ``policy``, recording in the history at
    ``history_path`` (SQLite; the service's ``<data_dir>/recovery_history.sqlite``).

    :meth:`submit` returns at once: the back-off wait and the commands run on one worker thread of this
    object, one incident at a time. :meth:`close` stops it (a back-off still waiting is dropped: the incident
    was not claimed, so it stays a recommendation)."""

    def __init__(self, executor: Executor, policy: Policy, history_path: str | Path) -> None:
        self.executor = executor
        self.policy = policy
        self.history_path = str(history_path)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="diag-recovery")
        self._closed = threading.Event()

    def plan(self, d: Diagnosis) -> tuple[RecoveryPlan | None, str]:
        """The policy's plan for ``d`` and why it will not be executed (empty when it will)."""
        if d.recovery is None:
            return None, "the diagnosis has no recovery plan (recovery is off)"
        history = History(self.history_path)
        try:
            # (the incident's restart and node faults are the service's to record, once: History.record_incident)
            plan = recommend(d, self.policy, history, platform=d.recovery.platform or "kubernetes", record_counts=False)
        finally:
            history.close()
        ex = self.policy.execution
        if not ex.live:
            return plan, "the recovery policy does not allow live execution (execution.live is false)"
        if plan.level not in ex.levels:
            return plan, f"the policy executes levels {[lv.value for lv in ex.levels]} only; this plan is {plan.level.value}"
        if not any(c.strip() and not c.lstrip().startswith("#") for c in plan.commands):
            return plan, "the plan has no command to run"
        if plan.timing != "now":
            return plan, f"the plan is for {plan.timing.replace('_', ' ')}, not now: left to a person"
        return plan, ""

    def submit(self, d: Diagnosis, incident: str, diagnosis_id: str) -> concurrent.futures.Future[Outcome]:
        """Execute the plan of ``d``, the final diagnosis ``diagnosis_id`` of ``incident``, when allowed and not
        done before; the :class:`Outcome` when it is over. Never raises (a failure is the outcome)."""
        return self._pool.submit(self._run, d, incident, diagnosis_id)

    def _run(self, d: Diagnosis, incident: str, diagnosis_id: str) -> Outcome:
        try:
            history = History(self.history_path)
            try:
                if history.execution_claimed(incident):  # a later final diagnosis of an incident acted on already
                    return Outcome("duplicate", incident, reason="this incident was executed before")
            finally:
                history.close()
            plan, why_not = self.plan(d)
        except Exception as exc:  # noqa: BLE001 - a broken history or platform: no execution, said why
            log.exception("incident %s: no plan to execute", incident)
            return Outcome("skipped", incident, reason=f"no plan: {type(exc).__name__}: {exc}")
        if plan is None or why_not:
            log.info("incident %s: plan not executed: %s", incident, why_not)
            return Outcome("skipped", incident, plan, why_not)
        if plan.backoff_s > 0 and self._closed.wait(plan.backoff_s):
            return Outcome("skipped", incident, plan, "the service stopped during the back-off")
        history = History(self.history_path)
        try:
            detail: dict[str, object] = {"diagnosis_id": diagnosis_id, "executor": type(self.executor).__name__}
            if not history.claim_execution(incident, d.job_id, plan, detail):
                return Outcome("duplicate", incident, plan, "this incident or plan was executed before")
            try:
                lines = self.executor.run(plan)
            except ExecutionRefused as exc:
                history.record_outcome(plan.idempotency_key, "refused", str(exc))
                log.warning("incident %s: plan refused by the executor: %s", incident, exc)
                return Outcome("refused", incident, plan, str(exc))
            except Exception as exc:  # noqa: BLE001 - a runner that broke (timeout, OS error): audited, not raised
                history.record_outcome(plan.idempotency_key, "failed", f"{type(exc).__name__}: {exc}")
                log.exception("incident %s: plan execution failed", incident)
                return Outcome("failed", incident, plan, f"{type(exc).__name__}: {exc}")
            ok = all(line.endswith(" -> exit 0") for line in lines)
            history.record_outcome(plan.idempotency_key, "executed" if ok else "failed", "; ".join(lines))
            log.warning("incident %s: recovery %s %s: %s", incident, plan.level.value, "executed" if ok else "failed",
                        "; ".join(lines))
            return Outcome("executed" if ok else "failed", incident, plan, lines=lines)
        finally:
            history.close()

    def close(self) -> None:
        """Stop: a back-off still waiting ends without executing; a command running finishes first."""
        self._closed.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
