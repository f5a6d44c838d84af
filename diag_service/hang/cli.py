"""``diag hang DUMPS_DIR [--logs LOG_BUNDLE] [--json]``: a thin layer over
:func:`~diag_service.pipeline.hang_with_logs`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from diag_service.domain import HangReport
from diag_service.hang.flight import fmt_ranks

err = Console(stderr=True)


def hang_cmd(
    dumps: Annotated[Path, typer.Argument(
        metavar="DUMPS",
        help="Stack snapshots <snapshot>/rank-<R>.txt|.json (a folder, a bundle with dumps/, or a .tar/.tar.gz/.zip of "
             "either) and/or PyTorch Flight Recorder dumps, one file per rank (<prefix><rank>), in the folder or a sub-folder.")],
    logs: Annotated[Path | None, typer.Option(help="The job's logs, for watchdog SeqNum evidence.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    min_stuck: Annotated[int, typer.Option(min=1, max=10_000, help="Unchanged snapshots that make a rank stuck.")] = 3,
) -> None:
    """Is the job hung, since when, which rank(s) are the culprits, and where is each stuck.
    \f
    Raises :class:`~diag_service.hang.analyzer.HangInputError` (exit 2, from the one CLI handler) when
    there is nothing to analyse."""
    from diag_service.pipeline import hang_with_logs

    # the logs' collective timeouts show the hang, as `diag diagnose` reads them: one snapshot then places the ranks
    # (analyze_hang finds a bundle's dumps/ folder itself)
    rep = hang_with_logs(dumps, logs, min_stuck)
    if json_out:
        sys.stdout.write(rep.model_dump_json(indent=2) + "\n")
        return
    c = Console()
    style = "bold yellow" if rep.hung or rep.undecided else "bold green"
    names = {"stacks": f"{rep.snapshots} stack snapshots", "flight_recorder": "Flight Recorder"}
    seen = " + ".join(names.get(e, e) for e in rep.evidence)
    head = "HUNG" if rep.hung else "undecided" if rep.undecided else "not hung"
    c.print(Panel(escape(rep.explanation), title=f"[{style}]{head}[/{style}]  "
                  f"{rep.ranks} ranks, {seen or 'no evidence'}"))
    if rep.suspects:
        t = Table(title="Suspects")
        for col in ("rank", "node", "score", "reason", "where"):
            t.add_column(col)
        for s in rep.suspects[:20]:
            where = s.top_frames[0] if s.top_frames else ""
            t.add_row(str(s.rank), escape(s.node or ""), f"{s.score:.2f}", escape(s.reason), escape(where))
        c.print(t)
    if rep.collectives is not None and rep.collectives.stalls:
        t = Table(title="Stalled collectives (Flight Recorder)")
        for col in ("group", "ranks", "collective", "joined", "never joined", "mismatched"):
            t.add_column(col)
        for st in sorted(rep.collectives.stalls, key=lambda s: len(s.group_ranks))[:20]:
            t.add_row(escape(st.group + (f" ({st.group_desc})" if st.group_desc else "")), fmt_ranks(st.group_ranks),
                      f"{st.op} #{st.seq}", fmt_ranks(st.joined), fmt_ranks(st.missing), escape(st.mismatch_detail or "-"))
        c.print(t)
    if not rep.groups:
        _notes(c, rep)
        return
    t = Table(title="Stack groups")
    t.add_column("ranks")
    t.add_column("collective")
    t.add_column("innermost frames")
    for g in rep.groups[:20]:
        ranks = fmt_ranks(g.ranks)
        t.add_row(ranks, g.collective or "-", escape(" < ".join(g.top_frames[:3])))
    c.print(t)
    _notes(c, rep)


def _notes(c: Console, rep: HangReport) -> None:
    """The logs' findings (what ``--logs`` added, not a problem: a new user read them as warnings), then warnings."""
    if rep.log_findings:
        c.print("From the logs:")
        for f in rep.log_findings[:20]:
            c.print(f"  • {escape(f)}")
    for w in rep.warnings[:20]:
        c.print(f"[yellow]warning:[/yellow] {escape(w)}")

