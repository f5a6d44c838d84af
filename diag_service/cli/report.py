"""Human-readable rendering of a :class:`~diag_service.domain.Diagnosis` with rich."""

from __future__ import annotations

import textwrap

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from diag_service.domain import Category, CheckpointSeen, Diagnosis, EventRole, RecoveryPlan, Responsible

_STYLE = {
    "fail_stop": "bold red",
    "fail_hang": "bold yellow",
    "fail_slow": "bold magenta",
}

_EMPTY = ": empty (0 bytes)"


def _folded_warnings(warnings: list[str]) -> list[str]:
    """The input warnings as the terminal report shows them: two or more empty files in one line (torchrun's per-rank
    ``stdout.log`` files are empty when the ranks print to stderr), naming the first three; the others as they are
    (``--json`` keeps every warning)."""
    empty = [w[: -len(_EMPTY)] for w in warnings if w.endswith(_EMPTY)]
    if len(empty) < 2:
        return list(warnings)
    names = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
    return [f"{len(empty)} empty files (0 bytes): {names}"] + [w for w in warnings if not w.endswith(_EMPTY)]


def _fallback_why(reason: str | None) -> str:
    """One short phrase for why the summary is the deterministic one (the full reason is in the JSON report)."""
    r = reason or ""
    if r.startswith("invalid answer"):
        # the check worked as meant (the model added something the cited lines do not say); not the model failing
        return "the model's wording added a claim the cited log lines do not show, so it was not used"
    if r.startswith("backend unavailable"):
        return "the local model is unavailable"
    if r == "disabled":
        return "no model asked"
    return r[:80] or "no model answer"


def render(d: Diagnosis, console: Console, max_events: int = 10) -> None:
    """Print the diagnosis: headline, root cause, evidence, events, warnings and stage timings."""
    head = Text()
    head.append(f"{d.failure_mode.value}", style=_STYLE.get(d.failure_mode.value, "bold"))
    head.append("  category ")
    head.append(d.category.value, style="bold cyan" if d.category is not Category.UNKNOWN else "bold white")
    head.append(f"  responsible {d.responsible.value}  confidence {d.confidence:.2f}")
    where = []
    if d.first_failing_rank is not None:
        where.append(f"first failing rank {d.first_failing_rank}"
                     + (f" (node {d.first_failing_node})" if d.first_failing_node and d.first_failing_node not in
                        d.faulty_nodes else ""))
    if d.faulty_nodes:
        where.append("faulty node(s) " + ", ".join(d.faulty_nodes[:8]))
    body = [head]
    if where:
        body.append(Text("  ".join(where), style="bold"))
    body.append(Text(""))
    body.append(Text(d.root_cause.summary))
    if d.narrative is not None and d.narrative.text:
        body.append(Text(""))
        body.append(Text(d.narrative.text, style="italic"))
        who = (f"model {d.narrative.model}" if d.narrative.source == "model"
               else f"written from the evidence ({_fallback_why(d.narrative.fallback_reason)}; --json has the details)")
        cites = f", cites {', '.join(d.narrative.citations)}" if d.narrative.citations else ""
        body.append(Text(f"summary: {who}{cites}", style="dim"))
        for c in d.narrative.cited:
            body.append(Text(f"  {c.id} ({c.label}): {textwrap.shorten(c.text, 160, placeholder=' …')}", style="dim"))
    console.print(Panel(Group(*body), title=f"diagnosis: {escape(d.job_id or d.input.path)}", expand=True))
    shown = _folded_warnings(d.input.warnings)
    for w in shown[:20]:
        console.print(f"[yellow]input warning:[/yellow] {escape(w)}")
    if len(shown) > 20:
        console.print(f"[yellow]… {len(shown) - 20} more input warnings (see --json)[/yellow]")

    if d.root_cause.evidence:
        console.print("[bold]Evidence[/bold]")
        for e in d.root_cause.evidence:
            meta = [f"{e.file}:{e.line}"]
            if e.rank is not None:
                meta.append(f"rank {e.rank}")
            if e.node:
                meta.append(f"node {e.node}")
            if e.timestamp:  # a borrowed (earlier) time is a lower bound: "at or after"
                meta.append(("at or after " if e.timestamp_approx else "") + e.timestamp[:23])
            console.print(f"  [dim]{escape('  '.join(meta))}[/dim]")
            console.print(f"    {escape(e.text[:500])}", soft_wrap=True)
    if d.findings:
        for f in d.findings:
            console.print(f"[dim]•[/dim] {escape(f)}")
    if d.events and max_events > 0:
        shown = "" if len(d.events) <= max_events else f", the first {max_events} shown (--events)"
        t = Table(title=f"Events (deduplicated, {len(d.events)} templates{shown})", expand=True)
        t.add_column("role")
        t.add_column("count", justify="right")
        t.add_column("ranks", justify="right")
        t.add_column("first", no_wrap=True)
        t.add_column("template")
        for ev in d.events[:max_events]:
            style = "red" if ev.role is EventRole.ROOT else "yellow" if ev.role is EventRole.SYMPTOM else ""
            t.add_row(
                Text(ev.role.value, style=style), str(ev.count), str(ev.n_ranks or ""),
                (ev.first_timestamp or "")[:19], escape(ev.template[:200]),
            )
        console.print(t)
    if d.recovery is not None:
        render_recovery(d.recovery, console, checkpoint=d.last_checkpoint)
    if d.similar_incidents or d.novel:
        head = "Similar past incidents" + (" (this one looks new)" if d.novel else "")
        source = f"category decided by {d.category_source}" if d.category is not Category.UNKNOWN else "no category decided"
        if not d.similar_incidents:
            head = "Similar past incidents: none (nothing to compare, or nothing close enough)"
        console.print(f"[bold]{head}[/bold]  [dim]{source}[/dim]")
        for s in d.similar_incidents[:3]:
            console.print(f"  {escape(s.incident_id)} ({s.score:.2f}, {s.category.value}) {escape(s.title)}")
            console.print(f"    [dim]fix:[/dim] {escape(s.action[:200])}")
    timing = "  ".join(f"{k} {v:.0f} ms" for k, v in d.timings_ms.items())
    console.print(
        f"[dim]{d.input.files} file(s), {d.input.lines} lines, {d.input.bytes_read} bytes; "
        f"layouts {', '.join(d.input.layouts) or '-'}; {timing}[/dim]"
    )


def render_recovery(plan: RecoveryPlan, console: Console, not_executed: str | None = None,
                    checkpoint: CheckpointSeen | None = None) -> None:
    """Print a recovery plan: level, action, why, its commands and each option's cost.

    The title says whether the commands were run: ``executed`` (``plan.executed``), ``not executed``
    when execution was asked for and refused (``not_executed`` is the refusal, shown in the panel),
    else ``dry-run``. ``checkpoint``: the diagnosis' last checkpoint save, named beside the lost training.
    """
    when = " at the next checkpoint" if plan.timing == "next_checkpoint" else ""
    backoff = f" after a {plan.backoff_s:.0f} s back-off" if plan.backoff_s else ""
    lines = [
        Text.assemble(("recovery ", "bold"), (plan.level.value, "bold green"), f"{when}{backoff}: {plan.action}"),
        Text(f"why: {plan.reason}", style="dim"),
    ]
    if plan.responsible is not None:
        lines.append(Text("who acts: " + ("the job owner" if plan.responsible is Responsible.USER else "the platform")))
    if plan.fix_hint:
        lines.append(Text(f"fix hint: {plan.fix_hint}"))
    if plan.history_note:
        lines.append(Text(f"history: {plan.history_note}", style="dim"))
    if plan.refused:
        lines.append(Text(f"not executable: {plan.refused}", style="bold red"))
    for c in plan.commands:
        lines.append(Text(f"  $ {c}", style="cyan"))
    costs = "  ".join(
        f"{o.level.value} {'owner-bound' if o.lost.unbounded else f'{o.lost.total_s / 60:.0f} min'}" for o in plan.options
    )
    lines.append(Text(f"estimated loss per option: {costs}", style="dim"))
    worked = max((o.lost.lost_progress_s for o in plan.options if o.lost.lost_progress_basis == "logs"), default=None)
    untrained = any(o.lost.lost_progress_basis == "no_training" for o in plan.options)
    which = ""
    if checkpoint is not None:
        which = (f"step {checkpoint.step}, " if checkpoint.step is not None else "") + \
            ("at or after " if checkpoint.timestamp_approx else "") + \
            f"{checkpoint.timestamp[:19].replace('T', ' ')}, {checkpoint.file}"
    if untrained:
        lines.append(Text("(no training step in the logs before the failure: a restart loses no training)", style="dim"))
    elif worked is not None:
        span = "less than a minute" if worked < 60 else f"the {worked / 60:.0f} min"
        since = ("the checkpoint the run resumed from (nothing saved after it)"
                 if checkpoint is not None and checkpoint.kind == "resumed" else "the last checkpoint save in the logs")
        unsure = ""
        if checkpoint is not None and checkpoint.unsure_timestamp is not None:
            what = f"step {checkpoint.unsure_step}" if checkpoint.unsure_step is not None else "the checkpoint"
            unsure = (f"; the save of {what} at {checkpoint.unsure_timestamp[:19].replace('T', ' ')} is not counted: "
                      "the storage failed before any step after it, so it may be incomplete")
        lines.append(Text(f"(each restart loses {span} of training since {since}"
                          + (f" ({which})" if which else "") + unsure + ")", style="dim"))
    elif any(o.lost.lost_progress_s for o in plan.options):
        half = max(o.lost.lost_progress_s for o in plan.options)
        why = (f"the last checkpoint save in the logs ({which}) but no time for the failure" if which
               else "no checkpoint save with a time in the logs")
        lines.append(Text(f"(lost training assumed {half / 60:.0f} min, half the policy's checkpoint interval: {why})",
                          style="dim"))
    if not_executed is not None:
        lines.append(Text(f"execution asked for, nothing run: {not_executed}", style="bold red"))
        mode = "not executed"
    else:
        mode = "executed" if plan.executed else "dry-run"
    console.print(Panel(Group(*lines), title=f"recovery ({escape(plan.platform)}, {mode})", expand=True))
