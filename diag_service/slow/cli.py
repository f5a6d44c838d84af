"""``diag slow TIMING_FEED [--json]``: is the job running slower than it should, and who is to blame?

``app`` is a :class:`typer.Typer` whose callback is the command, so it works both standalone
(``python -m diag_service.slow.cli FEED``) and mounted with ``app.add_typer(slow_app, name="slow")``
as ``diag slow FEED``. Exit status: 0 when the analysis ran (whatever it found), 2 when the input
cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from diag_service.clitools import DiagGroup
from diag_service.slow.analyze import analyze_slow
from diag_service.slow.models import SlowConfig, SlowReport

# A callback-only group; interspersed args so that ``FEED --json`` parses like ``--json FEED``.
app = typer.Typer(cls=DiagGroup,
    help="Fail-slow detection and straggler localisation from step timings or iteration lines.",
    context_settings={"allow_interspersed_args": True},
)
err = Console(stderr=True)


@app.callback(invoke_without_command=True)
def slow(
    timing_feed: Annotated[Path, typer.Argument(
        help="timing.jsonl / .csv / .parquet, a lab run folder, a public trace, or a log bundle with iteration lines.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the SlowReport as one JSON object.")] = False,
    min_effect: Annotated[float, typer.Option(help="Minimum slowdown to report (0.10 = 10 %).", min=0.01, max=5.0)] = 0.10,
    world_size: Annotated[int | None, typer.Option(help="Number of ranks, if known.", min=1)] = None,
    show: Annotated[int, typer.Option(help="Stragglers and alarms to list in the text report.", min=0)] = 10,
) -> None:
    """Detect job slowdowns (since when, by how much, time lost) and straggler ranks, nodes and stages."""
    rep = analyze_slow(timing_feed, SlowConfig(min_effect=min_effect), world_size=world_size)
    if json_out:
        typer.echo(rep.model_dump_json(indent=2))
        return
    print_report(rep, Console(), show)


def print_report(rep: SlowReport, con: Console, show: int = 10) -> None:
    """Render a :class:`SlowReport` for a terminal."""
    u = "s" if rep.units == "seconds" else f" ({rep.units})"
    lost = "lost (s)" if rep.units == "seconds" else f"lost ({rep.units})"
    if rep.failure_mode and rep.minor:
        con.print(f"[yellow]MINOR[/yellow]  a slowdown too small to act on ({escape(rep.minor)}); category if it grew: "
                  f"{rep.category}")
    elif rep.failure_mode:
        con.print(f"[red]FAIL-SLOW[/red]  category: {rep.category}")
    elif rep.baseline.step_time_s is None:  # a category is only given to a slowdown found
        con.print("[yellow]NOT JUDGED[/yellow]  too few steps for a baseline pace")
    else:
        con.print("[green]OK[/green]  no slowdown and no straggler")
    con.print(escape(rep.summary))
    b = rep.baseline
    if b.step_time_s is not None:
        con.print(f"baseline: {b.step_time_s:.4g}{u}/step (noise {b.noise_sigma:.3f} log-sd), warm-up {b.warmup_steps} "
                  f"steps, window steps {b.first_step}-{b.last_step}, {b.excluded_steps} excluded"
                  + (f"; periodic: {', '.join(b.periodic)}" if b.periodic else ""))
    if rep.job_slowdown:
        t = Table(title="job slowdown episodes")
        for col in ("start", "end", "detected", "factor", lost, "kind", "straggler ranks"):
            t.add_column(col)
        for e in rep.job_slowdown:
            t.add_row(str(e.start_step), "last read" if e.end_step is None else str(e.end_step), str(e.detected_at_step),
                      f"{e.slowdown_factor:.2f}x", f"{e.time_lost_s:.4g}", str(e.kind or ""),
                      ",".join(map(str, e.explained_by_ranks[:8])))
        con.print(t)
    if rep.groups:
        t = Table(title="nodes / stages")
        for col in ("group", "name", "kind", "factor", "since", "ranks", "basis"):
            t.add_column(col)
        for g in rep.groups[:show]:
            t.add_row(escape(g.group), escape(g.name), str(g.kind), f"{g.slowdown_factor:.2f}x", str(g.first_step),
                      f"{len(g.ranks)}/{g.n_ranks}", escape(g.basis))
        con.print(t)
    if rep.stragglers:
        t = Table(title=f"stragglers ({len(rep.stragglers)})")
        for col in ("rank", "node", "kind", "factor", "since", "detected", "slow steps", lost, "conf"):
            t.add_column(col)
        for s in rep.stragglers[:show]:
            t.add_row(str(s.rank), escape(s.node or ""), str(s.kind), f"{s.slowdown_factor:.2f}x",
                      str(s.first_step) + (" (start)" if s.present_at_start else ""), str(s.detected_at_step),
                      f"{s.slow_fraction:.0%}", f"{s.time_lost_s:.4g}", f"{s.confidence:.2f}")
        con.print(t)
    i = rep.input
    con.print(f"input: {i.format} {escape(i.source)}: {i.records} records, {i.ranks} ranks, {i.nodes} nodes, {i.steps} steps"
              f" (phases: {', '.join(i.phases) or 'none'})")
    for w in i.warnings:
        con.print(f"[yellow]warning:[/yellow] {escape(w)}")


if __name__ == "__main__":  # pragma: no cover
    app()
