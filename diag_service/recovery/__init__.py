"""Hierarchical recovery: map a diagnosis to the cheapest action likely to work (L0-L4).

Entry points: :func:`load_policy` (``knowledge_base/recovery_policy.yaml`` in, validated
:class:`Policy` out; raises :class:`PolicyError` naming the line), :func:`recommend`
(:class:`~diag_service.domain.Diagnosis` in, :class:`~diag_service.domain.RecoveryPlan` out) and
:class:`History` (SQLite: restarts, node faults, append-only audit log).

Nothing is executed here. The language model never chooses or edits an action.
"""

from diag_service.recovery.history import History
from diag_service.recovery.policy import Policy, PolicyError, default_policy_path, load_policy
from diag_service.recovery.recommend import DryRunExecutor, ExecutionRefused, ShellExecutor, recommend

__all__ = [
    "DryRunExecutor",
    "ExecutionRefused",
    "History",
    "Policy",
    "PolicyError",
    "ShellExecutor",
    "default_policy_path",
    "load_policy",
    "recommend",
]
