"""Choose the recovery for a diagnosis by the policy's first matching rule, with history.

Lost-time estimates (seconds; GPU-seconds when the GPU count is known) follow the ETPR terms:
restart and checkpoint reload are unproductive allocated time, progress since the last checkpoint
is recomputed work (half a checkpoint interval on average when unknown), node replacement adds the
time to bring a spare node. L4 waits for the job owner and is reported as unbounded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from diag_service.domain import (
    REPEAT_OFFENDER,
    RESTART_STORM,
    Diagnosis,
    EventKind,
    EventRole,
    LostTime,
    RecoveryLevel,
    RecoveryOption,
    RecoveryPlan,
    SignatureHit,
)
from diag_service.errors import ConfigError, DiagError, ErrorKind, InputError
from diag_service.recovery.history import History
from diag_service.recovery.hostlist import HostlistError, count_hosts, expand_hosts, is_hostlist
from diag_service.recovery.policy import FALLBACK_NAME, NodeNameRule, Policy, Rule, load_policy

_LEVEL_ORDER = [RecoveryLevel.L0, RecoveryLevel.L1, RecoveryLevel.L2, RecoveryLevel.L3, RecoveryLevel.L4]


def primary_hit(d: Diagnosis) -> SignatureHit | None:
    """The root signature that decided the diagnosis' category (:meth:`Diagnosis.primary_hit`)."""
    return d.primary_hit()


def idempotency_key(d: Diagnosis) -> str:
    """Same job and same failure evidence give the same key, so one diagnosis yields one action. When the job's
    restarts are known (``d.restarts``, a live job), the same evidence after another restart is another failure
    (a job that fails the same way on every attempt): the restart count is part of the key."""
    ev = d.root_cause.evidence[0] if d.root_cause.evidence else None
    hit = primary_hit(d)
    basis = [
        d.job_id, d.failure_mode.value, d.category.value, d.first_failing_rank, sorted(d.faulty_nodes),
        hit.signature_id if hit else None, hit.first_timestamp if hit else None,
        (ev.file, ev.line, ev.text) if ev else None,
    ]
    if d.restarts is not None:
        basis.append(["restarts", d.restarts.count])
    return hashlib.sha256(json.dumps(basis, default=str).encode()).hexdigest()[:24]


@dataclass
class Facts:
    """What the policy's history conditions read about one diagnosis (:func:`facts_of`)."""

    job_restarts: int = 0
    same_cause_restarts: int = 0
    node_faults: int = 0
    #: restarts in a row without training progress after them (the recovery history cannot tell progress: there,
    #: every restart it recorded for the job)
    restarts_without_progress: int = 0
    restart_storm: bool = False
    #: faulty node -> the distinct jobs (ids, this one first) whose failures named it within the window
    node_jobs: dict[str, list[str]] = field(default_factory=dict)
    repeat_offender: bool = False
    note: str | None = None

    def findings(self, d: Diagnosis, pol: Policy) -> list[str]:
        """The watchers' findings for ``d``: a restart storm, each repeat-offender node (most jobs first)."""
        out: list[str] = []
        if self.restart_storm:
            storm = d.restarts.storm(pol.history.storm_restarts) if d.restarts is not None else None
            out.append(storm or f"{RESTART_STORM}: {self.restarts_without_progress} restarts of this job recorded in "
                                "the recovery history before this failure")
        for node, jobs in sorted(self.node_jobs.items(), key=lambda kv: -len(kv[1])):
            if len(jobs) >= pol.history.lemon_node_faults:
                others = ", ".join(jobs[1:6]) + (" ..." if len(jobs) > 6 else "")
                out.append(f"{REPEAT_OFFENDER}: {node} was named in the failures of {len(jobs)} jobs in "
                           f"{pol.history.window_days:g} days (this one and {others})")
        return out


def facts_of(d: Diagnosis, pol: Policy, history: History | None = None, now: float | None = None) -> Facts:
    """The history facts of ``d``: restarts of its job (``d.restarts`` when its lifecycle is known, a live job's,
    else the ``history``'s count), restarts for its category and faults on its faulty nodes (``history``), the
    distinct jobs behind each faulty node within ``pol.history.window_days``, and whether they make a restart
    storm (``pol.history.storm_restarts``) or a repeat offender (``pol.history.lemon_node_faults``)."""
    facts = Facts()
    job = d.job_id or ""
    if history is not None:
        window = pol.history.window_days * 86400
        facts.job_restarts = facts.restarts_without_progress = history.job_restarts(job)
        facts.same_cause_restarts = history.job_restarts(job, d.category)
        # this diagnosis' own fault counts too: "repeats" means earlier faults plus this one
        facts.node_faults = max((history.node_faults(n, window, now) + 1 for n in d.faulty_nodes), default=0)
        facts.node_jobs = {n: [job, *history.node_jobs(n, window, now, exclude_job=job)] for n in d.faulty_nodes}
    else:
        facts.node_faults = 1 if d.faulty_nodes else 0
        facts.node_jobs = {n: [job] for n in d.faulty_nodes}
    if d.restarts is not None:  # the job's own events: the restarts that happened, not the plans recorded
        facts.job_restarts, facts.restarts_without_progress = d.restarts.count, d.restarts.without_progress
    facts.restart_storm = facts.restarts_without_progress >= pol.history.storm_restarts
    facts.repeat_offender = any(len(j) >= pol.history.lemon_node_faults for j in facts.node_jobs.values())
    if history is not None or d.restarts is not None:
        facts.note = (
            f"{facts.job_restarts} earlier restart(s) of this job"
            + (f" ({facts.restarts_without_progress} in a row without training progress)" if d.restarts is not None else "")
            + f" ({facts.same_cause_restarts} for {d.category.value}); faulty node(s) have {facts.node_faults} "
            f"fault(s) in {pol.history.window_days:g} days including this one"
        )
    return facts


#: event kinds that show a process of the job ending (``When.exited``)
_EXITED = frozenset({EventKind.EXIT, EventKind.ELASTIC_SUMMARY})


def _exited(d: Diagnosis) -> bool:
    """True when the logs show the job's processes ending: an exit code or a launcher's failure table
    (:data:`_EXITED` events), or a launcher's or driver's report that the run failed (a ``summary`` signature:
    torchrun's ChildFailedError, mpirun's abort, Ray Train's WorkerGroupError: a hang the launcher has already ended
    needs no "kill the hung job")."""
    return any(e.kind in _EXITED for e in d.events) or any(h.role is EventRole.SUMMARY for h in d.signature_hits)


def _matches(rule: Rule, d: Diagnosis, hit: SignatureHit | None, facts: Facts) -> bool:
    w = rule.when
    if w.failure_mode is not None and d.failure_mode not in w.failure_mode:
        return False
    if w.category is not None and d.category not in w.category:
        return False
    # a rule names a signature, or a context rule that refined the hit (``details['context_rule']``)
    ids = {hit.signature_id, str(hit.details.get("context_rule") or "")} if hit is not None else set()
    if w.signature_ids is not None and not ids & set(w.signature_ids):
        return False
    if w.not_signature_ids is not None and ids & set(w.not_signature_ids):
        return False
    if w.trained is not None and d.trained is not w.trained:
        return False
    if w.log_lines_at_most is not None and d.input.lines > w.log_lines_at_most:
        return False
    if w.xid_codes is not None:
        code = hit.details.get("code") if hit is not None and hit.signature_id == "xid" else None
        if code is None or not code.isdigit() or int(code) not in w.xid_codes:
            return False
    if w.min_confidence is not None and d.confidence < w.min_confidence:
        return False
    if w.max_confidence is not None and d.confidence > w.max_confidence:
        return False
    if w.has_faulty_nodes is not None and bool(d.faulty_nodes) != w.has_faulty_nodes:
        return False
    if w.has_evidence is not None and d.has_evidence() != w.has_evidence:
        return False
    if w.exited is not None and _exited(d) != w.exited:
        return False
    if w.summary_matches is not None:
        text = d.root_cause.summary + " " + " ".join(d.findings)
        if not re.search(w.summary_matches, text):
            return False
    if w.job_restarts_at_least is not None and facts.job_restarts < w.job_restarts_at_least:
        return False
    if w.same_cause_restarts_at_least is not None and facts.same_cause_restarts < w.same_cause_restarts_at_least:
        return False
    if w.restart_storm is not None and facts.restart_storm != w.restart_storm:
        return False
    if w.repeat_offender is not None and facts.repeat_offender != w.repeat_offender:
        return False
    return not (w.node_faults_at_least is not None and facts.node_faults < w.node_faults_at_least)


def _lost(level: RecoveryLevel, pol: Policy, gpus: int | None, since_save_s: float | None = None,
          untrained: bool = False) -> LostTime:
    """The option's estimated loss: the policy's restart, reload and replacement costs, and the work since the last
    checkpoint: ``since_save_s`` when the logs show it (:attr:`Diagnosis.last_checkpoint`), none when the rule
    decided on the logs showing no training step (``untrained``: the job failed in set-up), else half the policy's
    checkpoint interval (a failure falls anywhere in it)."""
    c = pol.costs
    if untrained:
        since_save_s = 0.0
    lost = LostTime(lost_progress_basis="no_training" if untrained else "logs" if since_save_s is not None else "policy")
    if level is not RecoveryLevel.L0:
        lost.restart_s = c.rank_restart_s if level is RecoveryLevel.L1 else c.job_restart_s
        lost.checkpoint_reload_s = c.checkpoint_reload_s
        if since_save_s is not None:
            lost.lost_progress_s = round(since_save_s, 3)
        else:
            lost.lost_progress_s = c.checkpoint_interval_s / 2
    if level is RecoveryLevel.L3:
        lost.node_replacement_s = c.node_replacement_s
    lost.unbounded = level is RecoveryLevel.L4
    lost.total_s = lost.restart_s + lost.checkpoint_reload_s + lost.lost_progress_s + lost.node_replacement_s
    if gpus:
        lost.gpu_seconds = lost.total_s * gpus
    return lost


_OPTION_TEXT = {
    RecoveryLevel.L0: "observe and continue",
    RecoveryLevel.L1: "restart the failed ranks in place",
    RecoveryLevel.L2: "restart the job from the last checkpoint on the same nodes",
    RecoveryLevel.L3: "cordon the faulty node(s), replace them, restart from checkpoint",
    RecoveryLevel.L4: "stop and hand to the job owner",
}


def _commands(pol: Policy, platform: str, level: RecoveryLevel, d: Diagnosis, reason: str,
              namespace: str | None) -> tuple[list[str], str | None]:
    """The plan's commands, and why the plan must not be executed (None when it may be).

    Every value put in a command is checked against the platform's name rule first: a job id
    (``job_ids``), node names (``node_names``; Slurm hostlists counted and expanded) and the namespace
    (``namespaces``); a value that fails is named in a comment and replaced by a placeholder, which the
    executor never runs. A plan on more than ``max_nodes`` nodes is refused for execution.
    """
    templates = pol.platforms.get(platform, {}).get(level, [])
    job = d.job_id or "JOB"
    wanted = d.faulty_nodes or (["NODE"] if level is RecoveryLevel.L3 else [])
    uses_nodes = any("{node}" in t or "{nodes}" in t for t in templates)
    nodes, bad, over, count = _usable_nodes(pol, platform, wanted if uses_nodes else [])
    out: list[str] = []
    rule = pol.job_ids.get(platform)
    # logs piped in (`kubectl logs POD | diag diagnose -`) without --job-id are named after the pipe, not the job
    piped = d.job_id == "stdin" and d.input.path in ("/dev/stdin", "-")
    logged = d.scheduler_job_id if platform == "slurm" else None
    from_logs = False
    if (rule is not None and any("{job_id}" in t for t in templates) and (piped or not re.fullmatch(rule.pattern, job))
            and logged is not None and re.fullmatch(rule.pattern, logged)):
        out.append(f"# job id {logged}: from the logs (Slurm's own lines, or the name of its slurm-<id>.out file)")
        job, from_logs = logged, True
    elif rule is not None and any("{job_id}" in t for t in templates) and (piped or not re.fullmatch(rule.pattern, job)):
        # a bundle's or log's name ("run_7") is not always the platform's job id; never act on a guess
        out.append(f"# the logs came on standard input without --job-id: replace JOB_NAME with {rule.use}" if piped
                   else f"# {job[:80]!r} is not {rule.what}: replace JOB_NAME with {rule.use}")
        job = "JOB_NAME"
    ns_from_logs = None
    if any("{namespace}" in t for t in templates):
        ns_rule = pol.namespaces.get(platform) or FALLBACK_NAME
        if namespace is None:  # the caller gave none: the one the logs state, shown, never run; else "default"
            if d.k8s_namespace and re.fullmatch(ns_rule.pattern, d.k8s_namespace):
                out.append(f"# namespace {d.k8s_namespace}: from the logs")
                namespace = ns_from_logs = d.k8s_namespace
            else:
                namespace = "default"
        if not re.fullmatch(ns_rule.pattern, namespace):
            out.append(f"# namespace refused: {namespace[:80]!r} is not {ns_rule.what}; "
                       "replace NAMESPACE with the job's namespace")
            namespace = "NAMESPACE"
    refused = None
    if from_logs:  # a target named by log text is shown to a person, never run by the service itself
        refused = f"the job id {logged} comes from the logs, not from the caller: confirm it and run the commands by hand"
    elif ns_from_logs is not None:
        refused = (f"the namespace {ns_from_logs} comes from the logs, not from the caller: confirm it and run the "
                   "commands by hand")
    if count > pol.max_nodes:
        refused = (f"this plan would act on {count} nodes, more than the policy allows (max_nodes {pol.max_nodes}); "
                   "confirm the nodes and run the commands by hand")
        nodes = nodes + over  # shown to the person, as comments only
    for t in templates:
        values = {
            "job_id": shlex.quote(job), "namespace": shlex.quote(namespace), "category": d.category.value,
            "reason": reason.replace('"', "'")[:120], "pods": "POD_OF_FAILED_RANK",
        }
        if "{node}" in t:
            for n in nodes:
                out.append(t.format(node=shlex.quote(n), nodes="", **values))
        else:  # {nodes}: every node in one comma-separated argument (Slurm's excnodelist replaces, not adds)
            out.append(t.format(node="", nodes=shlex.quote(",".join(nodes)), **values))
    if refused is not None:
        out = [f"# refused: {refused}"] + [c if c.lstrip().startswith("#") else "# " + c for c in out]
    return bad + out, refused


def _usable_nodes(pol: Policy, platform: str, wanted: list[str]) -> tuple[list[str], list[str], list[str], int]:
    """Check untrusted node values against ``platform``'s rule.

    Returns the single names that may be put in a command, comment lines for the refused ones, the
    hostlists too large to expand (kept as text, for display), and the number of nodes the plan would
    act on (names, plus the counted hosts of those hostlists).
    """
    rule = pol.node_names.get(platform) or FALLBACK_NAME
    hostlists = isinstance(rule, NodeNameRule) and rule.hostlist
    ok: dict[str, None] = {}
    bad: list[str] = []
    over: list[str] = []
    counted = 0
    for raw in dict.fromkeys(wanted):
        if raw == "NODE":
            ok[raw] = None
            continue
        shown = repr(raw[:80])
        names = [raw]
        if hostlists and is_hostlist(raw):
            try:
                n = count_hosts(raw)
                if n > pol.max_nodes:
                    over.append(raw)
                    counted += n
                    continue
                names = expand_hosts(raw, pol.max_nodes)
            except HostlistError as exc:
                bad.append(f"# node name refused: {shown} is not a Slurm hostlist ({exc}); not put in a command")
                continue
        for name in names:
            if re.fullmatch(rule.pattern, name):
                ok[name] = None
            else:
                bad.append(f"# node name refused: {repr(name[:80])} is not {rule.what}; not put in a command")
    if bad and not ok and not over:
        ok["NODE"] = None
    return list(ok), bad, over, counted + sum(1 for n in ok if n != "NODE")


def recommend(
    d: Diagnosis,
    policy: Policy | None = None,
    history: History | None = None,
    platform: str = "kubernetes",
    gpus: int | None = None,
    namespace: str | None = None,
    now: float | None = None,
    record_counts: bool = True,
    facts: Facts | None = None,
) -> RecoveryPlan:
    """The cheapest recovery that is likely to work, by the first matching policy rule.

    With a ``history``, the same diagnosis twice returns the first plan unchanged (idempotent) and
    is recorded once; restarts and node faults feed the escalation conditions (:func:`facts_of`; a live job's
    restarts come from ``d.restarts``). ``record_counts`` False records the plan without counting its restart and
    node faults (a live job's diagnoses: its incidents are counted once each, :meth:`History.record_incident`).
    ``gpus`` turns the lost-time estimate into GPU-seconds. ``facts``: :func:`facts_of` ``(d, policy, history)``
    when the caller has them already (else read here). Raises ``ValueError`` for a platform the policy lacks.
    """
    pol = policy or load_policy()
    if pol.platforms and platform not in pol.platforms:
        raise UnknownPlatform(f"unknown platform {platform!r}; the policy knows {sorted(pol.platforms)}")
    key = idempotency_key(d)
    if history is not None:
        prior = history.plan_for(key)
        if prior is not None:
            return prior
    hit = primary_hit(d)
    if facts is None:
        facts = facts_of(d, pol, history, now)
    note = facts.note
    rule = next((r for r in pol.rules if _matches(r, d, hit, facts)), None)
    if rule is None:  # a policy without a catch-all: the safe answer is to hand over
        level, rule_id, action, timing, backoff = RecoveryLevel.L4, "no_rule_matched", "No rule matched; hand over.", "now", False
        responsible = d.responsible
    else:
        level, rule_id, action, timing, backoff = rule.level, rule.id, rule.action, rule.timing, rule.backoff
        responsible = rule.responsible or d.responsible
    backoff_s = 0.0
    if backoff:
        backoff_s = min(pol.history.backoff_max_s, pol.history.backoff_base_s * (2 ** min(facts.job_restarts, 40)))
    hint = None
    if level is RecoveryLevel.L4 and hit is not None:
        hint = hit.explanation
    reason = f"{d.failure_mode.value}/{d.category.value}" + (f" ({hit.name})" if hit else "") + f" -> rule {rule_id}"
    commands, refused = _commands(pol, platform, level, d, reason, namespace)
    since_save = d.last_checkpoint.before_failure_s if d.last_checkpoint is not None else None
    # no training step, and the logs are not a mere excerpt: no training to lose (an excerpt does not say)
    untrained = rule.when.trained is False and rule.when.log_lines_at_most is None
    plan = RecoveryPlan(
        level=level, action=action, rule_id=rule_id, reason=reason, timing=timing, backoff_s=backoff_s,
        target_nodes=list(d.faulty_nodes) if level is RecoveryLevel.L3 else [],
        target_ranks=[d.first_failing_rank] if d.first_failing_rank is not None and level is RecoveryLevel.L1 else [],
        fix_hint=hint, responsible=responsible, platform=platform, commands=commands, refused=refused,
        options=[RecoveryOption(level=lv, action=_OPTION_TEXT[lv], lost=_lost(lv, pol, gpus, since_save,
                                                                             untrained=untrained))
                 for lv in _LEVEL_ORDER],
        history_note=note, idempotency_key=key,
    )
    if history is not None:
        history.record_recommendation(d, plan, hit.signature_id if hit else None, now, counts=record_counts)
    return plan


# --- execution (off by default) -------------------------------------------------------------------


class UnknownPlatform(InputError, ValueError):
    """The platform asked for is not one the policy has commands for."""


#: Words a plan puts where a value could not be trusted or known; a command holding one is never run.
PLACEHOLDERS = ("NODE", "JOB_NAME", "JOB", "POD_OF_FAILED_RANK", "NAMESPACE")


class ExecutionRefused(DiagError):
    """Execution was asked for without an explicitly configured executor, or a command is not allowed."""

    kind = ErrorKind.REFUSED


class Executor(Protocol):
    def run(self, plan: RecoveryPlan) -> list[str]: ...


class DryRunExecutor:
    """The default: returns the commands it would run and runs nothing."""

    def run(self, plan: RecoveryPlan) -> list[str]:
        return [f"DRY-RUN: {c}" for c in plan.commands]


#: Runs one command: ``(argv, timeout_s) -> exit code``. Raises :class:`ExecutionRefused` when it cannot.
Runner = Callable[[list[str], float], int]


def run_subprocess(argv: list[str], timeout_s: float) -> int:
    """The default :data:`Runner`: ``argv`` as a process (no shell), its exit code. Raises
    :class:`ExecutionRefused` when the binary is not installed."""
    if shutil.which(argv[0]) is None:
        raise ExecutionRefused(f"refusing to run {argv[:1]}: not installed")
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False).returncode


class ShellExecutor:
    """Runs a plan's commands, only when ``DIAG_EXECUTOR=shell`` is set, only allow-listed binaries.

    The whole plan is checked before anything runs: a plan with ``refused`` set (more nodes than the
    policy allows), a command holding a placeholder or naming another binary raises
    :class:`ExecutionRefused` and nothing is run. ``runner`` runs one command (default
    :func:`run_subprocess`, with ``timeout_s`` seconds per command); execution stops at the first
    command that fails.
    """

    ALLOWED = ("kubectl", "scontrol", "vcctl")

    def __init__(self, timeout_s: float = 120.0, runner: Runner | None = None) -> None:
        if os.environ.get("DIAG_EXECUTOR") != "shell":
            raise ExecutionRefused("execution is off: set DIAG_EXECUTOR=shell to configure the shell executor")
        self.timeout_s = timeout_s
        self.runner = runner or run_subprocess

    def check(self, plan: RecoveryPlan) -> list[tuple[str, list[str]]]:
        """The plan's runnable commands as ``(command, argv)``. Raises :class:`ExecutionRefused` for a
        plan that must not be executed as it stands."""
        if plan.refused:
            raise ExecutionRefused(f"refusing to execute this plan: {plan.refused}")
        todo: list[tuple[str, list[str]]] = []
        for cmd in plan.commands:
            if cmd.lstrip().startswith("#"):
                continue
            argv = shlex.split(cmd.split("  #", 1)[0])
            if any(a in PLACEHOLDERS for a in argv) or any(a.endswith(tuple("=" + p for p in PLACEHOLDERS)) for a in argv):
                why = [c.lstrip("# ").strip() for c in plan.commands if c.lstrip().startswith("#") and "refused" in c]
                raise ExecutionRefused(f"refusing to run {cmd[:120]!r}: it still holds a placeholder for a person to fill in"
                                       + (f" ({'; '.join(why)[:300]})" if why else ""))
            if not argv or argv[0] not in self.ALLOWED:
                raise ExecutionRefused(f"refusing to run {argv[:1]}: not an allowed binary ({', '.join(self.ALLOWED)})")
            todo.append((cmd, argv))
        return todo

    def run(self, plan: RecoveryPlan) -> list[str]:
        """Run the plan (after :meth:`check`); one ``"<command> -> exit N"`` line per command run."""
        out: list[str] = []
        for cmd, argv in self.check(plan):
            code = self.runner(argv, self.timeout_s)
            out.append(f"{cmd} -> exit {code}")
            if code != 0:
                break
        return out


def executor_from_env(runner: Runner | None = None) -> Executor | None:
    """The executor ``DIAG_EXECUTOR`` configures: ``shell`` gives a :class:`ShellExecutor` (``runner``: how it runs
    one command, default :func:`run_subprocess`); unset or empty gives None (nothing is executed). Raises
    :class:`~diag_service.errors.ConfigError` for any other value, so a misspelt setting is not silently off."""
    value = os.environ.get("DIAG_EXECUTOR", "").strip()
    if not value:
        return None
    if value != "shell":
        raise ConfigError(f"DIAG_EXECUTOR={value[:40]!r} is not an executor; the one there is: shell")
    return ShellExecutor(runner=runner)
